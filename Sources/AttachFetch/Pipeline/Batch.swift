import Synchronization

/// Everything the attachments of one batch share: its clock, its directory, and whether its
/// deadline has fired.
final class Batch: Sendable {
    private static let nextID = Atomic<Int>(0)
    let id = Batch.nextID.add(1, ordering: .relaxed).newValue
    let start: ContinuousClock.Instant
    let deadline: ContinuousClock.Instant
    let directory: WorkingDirectory
    /// Where ready files end up: the working directory itself, or the caller's directory.
    let finalDirectory: String
    private let deadlineFired = Atomic<Bool>(false)

    init(start: ContinuousClock.Instant, deadline: ContinuousClock.Instant, directory: WorkingDirectory, finalDirectory: String) {
        self.start = start
        self.deadline = deadline
        self.directory = directory
        self.finalDirectory = finalDirectory
    }

    /// The deadline sentinel calls this when the deadline passes, just before it cancels the
    /// batch's tasks.
    func fireDeadline() { deadlineFired.store(true, ordering: .sequentiallyConsistent) }

    /// Why work stops early. The batch cancels its tasks when the deadline fires, so a
    /// cancellation seen after that is the deadline; before it, the caller's.
    enum StopCause { case deadline, cancellation }

    /// The one place that tells a deadline from a cancellation.
    var stopCause: StopCause { deadlineFired.load(ordering: .sequentiallyConsistent) ? .deadline : .cancellation }

    /// The reason an attachment stopped by the deadline or a cancellation gets.
    func stopReason(queued: Bool) -> Reason {
        switch stopCause {
        case .cancellation:
            return Reason(code: .cancelled, message: "the request was cancelled")
        case .deadline:
            return Reason(code: .deadlineExceeded, message: queued
                ? "the batch deadline passed while the request was queued"
                : "the batch deadline passed before this attachment was finished")
        }
    }

    /// A reason from the download: its "cancelled" after the deadline fired is the deadline.
    func settle(_ reason: Reason, queued: Bool) -> Reason {
        reason.code == .cancelled && stopCause == .deadline ? stopReason(queued: queued) : reason
    }
}
