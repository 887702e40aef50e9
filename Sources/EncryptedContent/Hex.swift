/// Lower-case hexadecimal, two digits a byte: key ids, digests. Written here because
/// FoundationEssentials, which the decoder links instead of Foundation, has no `String(format:)`.
package enum Hex {
    package static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
