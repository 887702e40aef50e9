import Foundation

/// The response headers that decide whether, and for how long, a result may be reused, and
/// how to revalidate it (RFC 9111). Collected from the last response of a transfer.
package struct CacheHeaders: Sendable, Equatable, Codable {
    package var cacheControl: [String] = []
    package var expires: [String] = []
    package var date: String?
    package var age: String?
    package var pragma: [String] = []
    var etag: String?
    var lastModified: String?

    package init(cacheControl: [String] = [], expires: [String] = [], date: String? = nil, age: String? = nil,
                 pragma: [String] = [], etag: String? = nil, lastModified: String? = nil) {
        (self.cacheControl, self.expires, self.date, self.age) = (cacheControl, expires, date, age)
        (self.pragma, self.etag, self.lastModified) = (pragma, etag, lastModified)
    }

    /// Records one header line; false when it is not one of these.
    package mutating func take(name: String, value: String) {
        switch name.lowercased() {
        case "cache-control": cacheControl.append(value)
        case "expires": expires.append(value)
        case "date": date = value
        case "age": age = value
        case "pragma": pragma.append(value)
        case "etag": etag = value
        case "last-modified": lastModified = value
        default: break
        }
    }

    /// True when the response says anything about freshness (a 304 that does not keeps the old lifetime).
    package var speaksOfFreshness: Bool { !cacheControl.isEmpty || !expires.isEmpty }

    /// What a later request sends to ask "has it changed?".
    package var validators: CacheValidators? {
        etag == nil && lastModified == nil ? nil : CacheValidators(etag: etag, lastModified: lastModified)
    }
}

/// `If-None-Match` / `If-Modified-Since` values for a revalidation.
package struct CacheValidators: Sendable, Equatable {
    var etag: String?
    var lastModified: String?

    package init(etag: String?, lastModified: String?) {
        (self.etag, self.lastModified) = (etag, lastModified)
    }

    var requestHeaders: [String] {
        (etag.map { ["If-None-Match: \($0)"] } ?? []) + (lastModified.map { ["If-Modified-Since: \($0)"] } ?? [])
    }
}
