internal import CCurl

/// The limits the engine enforces on running transfers at each turn: the batch deadline, the
/// caller's cancellation and the stall timer. Engine thread only.
extension TransferEngine {
    /// Cancels, deadline-expires and stall-expires active transfers. Returns how long the loop
    /// may sleep before one of these clocks next needs looking at.
    func enforceLimits(now deadlineNow: ContinuousClock.Instant, realNow now: ContinuousClock.Instant) -> Duration {
        // The batch deadline by the pipeline's clock; the stall timer, like libcurl's own
        // timeouts, in real time.
        var wait: Duration = .seconds(1)
        var stopping: [UnsafeMutableRawPointer] = []
        for (handle, transfer) in active {
            let spec = transfer.job.spec
            if deadlineNow >= spec.deadline {
                transfer.abort(.deadlineExceeded, "the batch deadline passed during the transfer")
            } else if transfer.job.isCancelRequested {
                transfer.abort(.cancelled, "the request was cancelled")
            } else {
                wait = min(wait, spec.deadline - deadlineNow)
                // A body paused for bytes in flight is waiting on us, not on the server.
                if transfer.pausedSince != nil {
                    transfer.lastActivity = now
                } else if !transfer.stallArmed {
                    // Armed once the request can be sent: on a fresh connection after connecting,
                    // on a reused keep-alive connection (whose connect time stays 0) at once.
                    if transfer.receivedAnything
                        || (CurlOption.offset(handle, CURLINFO_PRETRANSFER_TIME_T) ?? 0) > 0
                        || (CurlOption.offset(handle, CURLINFO_CONNECT_TIME_T) ?? 0) > 0 {
                        transfer.stallArmed = true
                        transfer.lastActivity = max(transfer.lastActivity, now)
                    } else {
                        wait = min(wait, .milliseconds(20))
                    }
                }
                if transfer.stallArmed && transfer.pausedSince == nil {
                    let quietUntil = transfer.lastActivity + spec.timeout.stall
                    if now >= quietUntil {
                        transfer.abort(.timeout, "no data arrived for \(spec.timeout.stall.milliseconds) ms")
                    } else {
                        wait = min(wait, quietUntil - now)
                    }
                }
            }
            if transfer.abortReason != nil { stopping.append(handle) }
        }
        for handle in stopping { finish(handle, curlCode: nil) }
        return wait
    }
}
