import Logging

extension AttachmentPipeline {
    /// Processes a batch as `process` does, yielding each attachment as it is finished (in the
    /// order they finish). The sequence ends when every request has its descriptor, by the
    /// deadline. Ending the iteration early cancels the batch's remaining work. The parameters
    /// are `process`'s.
    public func descriptors(for requests: [AttachmentRequest], deadline: Duration? = nil,
                            outputDirectory: String? = nil, keepingFiles: Bool = true,
                            logger: Logger? = nil) -> AsyncStream<FinishedAttachment> {
        AsyncStream { continuation in
            let batch = Task {
                _ = await self.process(requests, deadline: deadline, outputDirectory: outputDirectory, keepingFiles: keepingFiles,
                                       logger: logger) { index, descriptor in
                    continuation.yield(FinishedAttachment(index: index, descriptor: descriptor))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in batch.cancel() }
        }
    }
}
