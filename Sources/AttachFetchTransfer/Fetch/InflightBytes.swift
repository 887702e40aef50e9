import DequeModule

/// The bytes the running downloads may hold in temporary files at once
/// (`maxInflightBytes`), and the transfers waiting for theirs.
///
/// A transfer reserves when its body starts: its declared length (Content-Length), or, when
/// the server declares none, the largest size limit, since its kind is not yet known; once its
/// kind is admitted it gives back what that kind's limit leaves unused, and at its end it gives
/// back all of it. A body that does not fit is paused (libcurl's CURL_WRITEFUNC_PAUSE, so its
/// bytes stay in the socket, not on disk) until earlier reservations end, first come first
/// served. Reserving when the body starts rather than when the request is queued keeps the
/// budget from throttling small images: their declared length is known before any byte is
/// written, so thousands fit where one unknown body would need the largest limit.
///
/// Engine thread only (libcurl calls every callback there), so it needs no lock.
final class InflightBytes {
    package let limit: Int64
    private(set) var reserved: Int64 = 0
    /// Bytes written to temporary files by transfers still running, and the most ever at once.
    package private(set) var written: Int64 = 0
    private(set) var peakWritten: Int64 = 0
    /// Transfers paused until their reservation fits, in the order they asked.
    package private(set) var paused: Deque<EasyTransfer> = []

    init(limit: Int64) { self.limit = limit }

    /// Reserves `bytes` when they fit beside the others, and nothing waits before them.
    func reserve(_ bytes: Int64) -> Bool {
        guard paused.isEmpty, reserved + bytes <= limit else { return false }
        reserved += bytes
        return true
    }

    package func release(_ bytes: Int64) { reserved = max(0, reserved - bytes) }

    package func wait(_ transfer: EasyTransfer) { paused.append(transfer) }

    func stopWaiting(_ transfer: EasyTransfer) {
        if let index = paused.firstIndex(where: { $0 === transfer }) { paused.remove(at: index) }
    }

    /// Takes, in order, the paused transfers whose reservations now fit, reserving for each.
    func admitWaiting() -> [EasyTransfer] {
        var admitted: [EasyTransfer] = []
        while let first = paused.first, reserved + first.wantedReservation <= limit {
            paused.removeFirst()
            reserved += first.wantedReservation
            admitted.append(first)
        }
        return admitted
    }

    func wrote(_ bytes: Int64) {
        written += bytes
        peakWritten = max(peakWritten, written)
    }

    /// A transfer ended: its bytes are now a delivered file or gone.
    package func ended(written bytes: Int64) { written = max(0, written - bytes) }
}
