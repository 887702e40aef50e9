/// The result of one batch.
public struct AttachmentBatch: Sendable {
    /// One descriptor per request, in request order.
    public var attachments: [AttachmentDescriptor]
    /// Time from the call to its return.
    public var elapsed: Duration
    /// The deadline the batch ran under.
    public var deadline: Duration
    /// Where ready files were kept, or nil when none were kept.
    public var directory: String?

    /// Makes a batch result, for example a fake in a test.
    public init(attachments: [AttachmentDescriptor], elapsed: Duration, deadline: Duration, directory: String?) {
        self.attachments = attachments
        self.elapsed = elapsed
        self.deadline = deadline
        self.directory = directory
    }
}

/// One attachment of a batch, as `AttachmentPipeline.descriptors(for:)` yields it when it is finished.
public struct FinishedAttachment: Sendable {
    /// Its position among the requests.
    public var index: Int
    /// Its descriptor.
    public var descriptor: AttachmentDescriptor

    /// Makes a finished attachment, for example a fake in a test.
    public init(index: Int, descriptor: AttachmentDescriptor) {
        self.index = index
        self.descriptor = descriptor
    }
}
