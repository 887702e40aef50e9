import Foundation

/// How long a result stays fresh, from its headers.
enum HTTPFreshness {
    /// The lifetime the headers give, capped by `maximum`; `fallback` when they say nothing.
    /// Nil: never cached (`no-store`, `private`, or headers that contradict each other). Zero:
    /// stored, but revalidated before every reuse (`no-cache`, an Expires already past or
    /// unreadable).
    static func lifetime(of headers: CacheHeaders, now: Date = Date(),
                         maximum: Duration, fallback: Duration) -> Duration? {
        var directives: [String: [String?]] = [:]
        for line in headers.cacheControl {
            for part in line.split(separator: ",") {
                let pieces = part.split(separator: "=", maxSplits: 1)
                guard let rawName = pieces.first else { continue }
                let name = rawName.trimmingCharacters(in: .whitespaces).lowercased()
                guard !name.isEmpty else { continue }
                let value = pieces.count > 1
                    ? pieces[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                    : nil
                directives[name, default: []].append(value)
            }
        }
        if directives["no-store"] != nil || directives["private"] != nil { return nil }
        // Two different values for one directive, or one that is not a number, contradict.
        func seconds(_ name: String) -> Int?? {
            guard let values = directives[name] else { return .some(nil) }
            let numbers = Set(values.map { $0.flatMap { Int($0) } })
            guard numbers.count == 1, let only = numbers.first, let value = only, value >= 0 else { return nil }
            return .some(value)
        }
        guard let sharedMaxAge = seconds("s-maxage"), let maxAge = seconds("max-age") else { return nil }
        guard Set(headers.expires).count <= 1 else { return nil }
        if directives["public"] != nil && directives["private"] != nil { return nil }

        var lifetime: Duration
        if let given = sharedMaxAge ?? maxAge {
            lifetime = .seconds(given)
        } else if let expires = headers.expires.first {
            guard let expiry = parseDate(expires) else { return .zero }
            let origin = headers.date.flatMap(parseDate) ?? now
            lifetime = .seconds(max(0, Int(expiry.timeIntervalSince(origin))))
        } else if headers.pragma.contains(where: { $0.lowercased().contains("no-cache") }) {
            lifetime = .zero
        } else {
            lifetime = fallback
        }
        if directives["no-cache"] != nil { lifetime = .zero }
        if let age = headers.age.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }), age > 0 {
            lifetime = max(.zero, lifetime - .seconds(age))
        }
        return min(lifetime, maximum)
    }

    /// An HTTP date in its one current form, IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT").
    /// The obsolete forms are read as unreadable, which for Expires means already expired.
    static func parseDate(_ text: String) -> Date? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT",
              let day = Int(parts[1]), let month = months.firstIndex(of: String(parts[2])), let year = Int(parts[3]) else { return nil }
        let clock = parts[4].split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3, (1...31).contains(day), (0...23).contains(clock[0]), (0...59).contains(clock[1]),
              (0...60).contains(clock[2]) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT")!
        return calendar.date(from: DateComponents(year: year, month: month + 1, day: day,
                                                  hour: clock[0], minute: clock[1], second: clock[2]))
    }
}
