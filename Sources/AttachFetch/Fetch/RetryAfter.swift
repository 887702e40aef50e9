import Foundation

/// What counts against an origin's circuit breaker, in the words its message uses: connect
/// failures and refusals, timeouts, TLS failures and 5xx answers. Anything else (a 404, media
/// refused, the batch's deadline) says nothing about the origin's health.
enum OriginFailure {
    /// `osError` is the connect call's errno (CURLINFO_OS_ERRNO), which tells a refusal apart.
    static func describe(_ failure: Reason?, status: Int, osError: Int = 0) -> String? {
        guard let failure else { return nil }
        switch failure.code {
        case .connectFailed:
            return osError == Int(ECONNREFUSED) ? "refused the connection" : "could not be connected to"
        case .timeout: return "timed out"
        case .tlsFailed: return "failed the TLS handshake"
        case .httpStatus where status >= 500: return "answered HTTP \(status)"
        default: return nil
        }
    }
}

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
