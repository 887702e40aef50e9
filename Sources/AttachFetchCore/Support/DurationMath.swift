extension Duration {
    /// Whole milliseconds, rounded towards zero.
    package var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000 + attoseconds / 1_000_000_000_000_000
    }
}

extension Duration {
    /// Whole milliseconds, rounded up, at least 1: a timeout handed to libcurl must not fire
    /// before the instant it stands for.
    package var timeoutMilliseconds: Int {
        let (seconds, attoseconds) = components
        let whole = seconds * 1_000 + attoseconds / 1_000_000_000_000_000
        let rest = attoseconds % 1_000_000_000_000_000
        return Int(max(1, whole + (rest > 0 ? 1 : 0)))
    }
}

extension Duration {
    /// Seconds as a floating-point number (for wall-clock arithmetic in seconds since 1970).
    package var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

extension ContinuousClock.Instant {
    /// Milliseconds from `self` to now, never negative.
    package var millisecondsElapsed: Int { Int(max(0, (ContinuousClock.now - self).milliseconds)) }
}
