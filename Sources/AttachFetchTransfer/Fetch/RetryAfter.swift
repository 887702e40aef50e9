import Foundation

/// RFC 9110 §10.2.3: Retry-After is a number of seconds or an HTTP date.
enum RetryAfter {
    /// The delay the header asks for, from `now` (never negative); nil when it is neither form.
    static func delay(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.allSatisfy(\.isASCIIDigit) {
            // Absurd values are clamped, not overflowed: a day is far past any deadline.
            return .seconds(min(Int(text.prefix(9)) ?? 86_400, 86_400))
        }
        guard let date = httpDate(text) else { return nil }
        return .milliseconds(max(0, Int64(date.timeIntervalSince(now) * 1000)))
    }

    /// IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), the form senders must use; the obsolete
    /// forms are not accepted (a retry is then simply not made).
    static func httpDate(_ text: String) -> Date? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT", let day = Int(parts[1]), let year = Int(parts[3]),
              let month = months.firstIndex(of: String(parts[2])) else { return nil }
        let time = parts[4].split(separator: ":").compactMap { Int($0) }
        guard time.count == 3 else { return nil }
        var components = DateComponents()
        (components.year, components.month, components.day) = (year, month + 1, day)
        (components.hour, components.minute, components.second) = (time[0], time[1], time[2])
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(from: components)
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
