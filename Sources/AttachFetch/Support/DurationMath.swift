extension Duration {
    /// Whole milliseconds, rounded towards zero.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000 + attoseconds / 1_000_000_000_000_000
    }
}

extension ContinuousClock.Instant {
    /// Milliseconds from `self` to now, never negative.
    var millisecondsElapsed: Int { Int(max(0, (ContinuousClock.now - self).milliseconds)) }
}
