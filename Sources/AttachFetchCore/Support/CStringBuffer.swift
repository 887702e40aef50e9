extension String {
    /// The text a C call wrote into `buffer`: up to its first NUL, or all of it when the call
    /// left none, as UTF-8 with invalid bytes replaced. `String(cString:)` on an array, which
    /// this replaces, is deprecated: it reads past an array with no NUL.
    package init(nulTerminated buffer: [CChar]) {
        self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
