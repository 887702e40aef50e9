// Fuzz target for ContentDecoder: random keys, headers, record sizes, streams and chunkings.
//
// Built for libFuzzer (scripts/fuzz-decoder.sh), with -DFUZZING: main hands control to
// libFuzzer's driver. Built normally, it replays the inputs named on the command line.
//
// Each input is read as: a mode byte, a 16-byte key, an 8-byte seed (chunk sizes, plaintext,
// mutations), four parameter bytes, then data. The modes:
// 0. the data is the stream, as it comes (any header, any record size);
// 1. a header made from the parameters (any record size, 0 and 2^32-1 included; the key's key
//    id, none, or another's), then the data repeated up to 4 MiB (a body that goes on);
// 2. a valid stream of the seed's plaintext, then one mutation (a flipped byte, a cut,
//    garbage after it, another record size in the header);
// 3. a valid stream, unmutated: it must decrypt to its plaintext.
// Whatever the input, it traps when the decoder breaks a promise: plaintext other than what
// was encrypted, a valid stream refused, more buffered than one record (or the longest header),
// a record size over the maximum accepted, or a stream longer than `maxContentLength`.
import EncryptedContent
import Foundation
import FuzzDriver

/// SplitMix64: chunk sizes and plaintext from the input's seed, the same on every replay.
struct Random {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ bound: Int) -> Int { bound <= 1 ? 0 : Int(next() % UInt64(bound)) }
    mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
}

/// Decodes `stream` in chunks the seed picks (often tiny, sometimes whole), checking the bound
/// on what the decoder holds after every chunk. Returns the plaintext, or nil when refused.
func decode(_ stream: [UInt8], key: ContentKey, maxRecordSize: Int, random: inout Random) -> [UInt8]? {
    var decoder = ContentDecoder(key: key, maxRecordSize: maxRecordSize)
    var plaintext: [UInt8] = []
    var offset = 0
    do {
        while offset < stream.count {
            let size: Int
            switch random.below(4) {
            case 0: size = 1 + random.below(8)
            case 1: size = 1 + random.below(300)
            case 2: size = 1 + random.below(70_000)
            default: size = stream.count
            }
            let end = min(stream.count, offset + size)
            try decoder.feed(stream[offset..<end]) { plaintext += $0 }
            offset = end
            let recordSize = decoder.headerRecordSize ?? 0
            precondition(recordSize <= maxRecordSize, "a record size over the maximum was accepted")
            precondition(decoder.bufferedByteCount <= max(recordSize, AES128GCM.maxHeaderSize),
                         "\(decoder.bufferedByteCount) bytes held with records of \(recordSize)")
        }
        try decoder.finish { plaintext += $0 }
        return plaintext
    } catch let error as ContentEncryptionError {
        if error.code == .recordTooLarge { precondition(plaintext.isEmpty, "plaintext before the header was refused") }
        return nil
    } catch {
        preconditionFailure("not a ContentEncryptionError: \(error)")
    }
}

/// A stream of `plaintext` in records of `recordSize`, as the publisher writes it.
func encrypt(_ plaintext: [UInt8], key: ContentKey, salt: [UInt8], recordSize: Int, keyID: [UInt8]?) -> [UInt8] {
    var encoder = try! ContentEncoder(key: key, salt: salt, recordSize: recordSize, keyID: keyID)
    var stream = encoder.header
    var offset = 0
    repeat {
        let end = min(offset + encoder.plaintextPerRecord, plaintext.count)
        stream += try! encoder.seal(plaintext[offset..<end], last: end == plaintext.count)
        offset = end
    } while offset < plaintext.count
    return stream
}

func run(_ input: [UInt8]) {
    guard input.count >= 29 else { return }
    let mode = input[0] & 3
    let key = ContentKey(bytes: Array(input[1..<17]))!
    var random = Random(state: input[17..<25].reduce(0) { $0 << 8 | UInt64($1) })
    let parameters = Array(input[25..<29])
    let data = Array(input[29...])
    // Mostly the default maximum; sometimes a small one, so that the refusal is reached often.
    let maxRecordSize = parameters[0] & 1 == 0 ? AES128GCM.maxRecordSize : 18 + Int(parameters[1]) * 64
    switch mode {
    case 0:
        _ = decode(data, key: key, maxRecordSize: maxRecordSize, random: &random)
    case 1:
        let recordSize = UInt32(parameters[0]) << 24 | UInt32(parameters[1]) << 16 | UInt32(parameters[2]) << 8 | UInt32(parameters[3])
        let keyID: [UInt8] = switch random.below(3) {
        case 0: key.keyID
        case 1: []
        default: ContentKey(bytes: random.bytes(16))!.keyID
        }
        var stream = random.bytes(16) + withUnsafeBytes(of: recordSize.bigEndian) { Array($0) } + [UInt8(keyID.count)] + keyID
        if !data.isEmpty {
            // Mostly up to 256 KiB, sometimes up to 4 MiB: longer than many records, quick.
            let length = random.below(random.below(4) == 0 ? 4 << 20 : 256 << 10)
            var body = data
            while body.count < length { body += body }
            stream += body.prefix(length)
        }
        if decode(stream, key: key, maxRecordSize: maxRecordSize, random: &random) != nil {
            // Only a stream whose records happen to authenticate could; random ones never do.
            preconditionFailure("a made-up stream decrypted")
        }
    default:
        let recordSize = 18 + (parameters[1] & 0x80 == 0 ? random.below(600) : random.below(1 << 18))
        // At most about 300 records, so that one input stays quick.
        let length = min(data.count + random.below(4 * (recordSize - 17)), 300 * (recordSize - 17))
        let plaintext = Array((data + random.bytes(max(0, length - data.count))).prefix(length))
        let keyID: [UInt8]? = parameters[2] & 1 == 0 ? nil : []
        var stream = encrypt(plaintext, key: key, salt: random.bytes(16), recordSize: recordSize, keyID: keyID)
        let headerSize = AES128GCM.fixedHeaderSize + Int(stream[20])
        precondition(stream.count <= AES128GCM.maxContentLength(plaintext: Int64(length), recordSize: recordSize, headerSize: headerSize),
                     "a stream longer than maxContentLength")
        let original = stream
        if mode == 2 {
            switch parameters[3] & 3 {
            case 0: stream[random.below(stream.count)] ^= UInt8(1 + random.below(255))
            case 1: stream = Array(stream.prefix(random.below(stream.count)))
            case 2: stream += data.isEmpty ? [0] : data
            default: stream.replaceSubrange(16..<20, with: random.bytes(4))
            }
        }
        let decoded = decode(stream, key: key, maxRecordSize: maxRecordSize, random: &random)
        if stream == original && recordSize <= maxRecordSize {
            precondition(decoded == plaintext, "a valid stream did not decrypt to its plaintext")
        } else if let decoded {
            // Authenticated encryption: whatever is accepted is what was encrypted.
            precondition(decoded == plaintext, "a changed stream decrypted to other plaintext")
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

@main
struct FuzzMain {
    static func main() {
        FuzzDriver.run(target: fuzzOneInput, usage: "content-decoder-fuzz FILE...   (replays inputs through the fuzzed decoder)") { path, bytes in
            run(bytes)
            print("ok \(path)")
        }
    }
}
