import Logging

/// Runs `body` with a new pipeline and shuts the pipeline down afterwards, whether `body`
/// returns or throws: the pipeline's download thread and decoder workers never outlive the
/// call. For a pipeline that lives as long as the program, create one and call `shutdown()`.
public func withAttachmentPipeline<Result: Sendable>(
    configuration: AttachFetchConfiguration = .init(),
    logger: Logger = AttachmentPipeline.silentLogger,
    _ body: (AttachmentPipeline) async throws -> Result
) async throws -> Result {
    let pipeline = try AttachmentPipeline(configuration: configuration, logger: logger)
    do {
        let result = try await body(pipeline)
        await pipeline.shutdown()
        return result
    } catch {
        await pipeline.shutdown()
        throw error
    }
}
