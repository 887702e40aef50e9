import Foundation

/// A `Content-Range: bytes first-last/total` header (RFC 9110, 14.4); an unknown total (`*`)
/// is not taken.
struct ContentRange: Equatable {
    var first: Int64
    var last: Int64
    var total: Int64
    var length: Int64 { last - first + 1 }

    init?(_ header: String) {
        let parts = header.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bytes" else { return nil }
        let spanAndTotal = parts[1].split(separator: "/")
        guard spanAndTotal.count == 2, let total = Int64(spanAndTotal[1]) else { return nil }
        let span = spanAndTotal[0].split(separator: "-")
        guard span.count == 2, let first = Int64(span[0]), let last = Int64(span[1]),
              first >= 0, first <= last, last < total else { return nil }
        (self.first, self.last, self.total) = (first, last, total)
    }
}
