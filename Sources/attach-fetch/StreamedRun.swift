import ArgumentParser
import AttachFetch
import AttachFetchService
import Foundation

/// The URLs to fetch as requests, the first already read (so that an empty input is a usage
/// error before the pipeline starts), the rest read as the batch asks for them.
struct URLRequests: AsyncSequence, AsyncIteratorProtocol {
    typealias Element = AttachmentRequest
    typealias Failure = Never

    private var first: String?
    private var rest: InputURLs.Iterator
    /// Where the URLs come from, for its read failure once the batch is done.
    let input: InputURLs
    private let request: (String) -> AttachmentRequest

    init(first: String, rest: InputURLs.Iterator, input: InputURLs, request: @escaping (String) -> AttachmentRequest) {
        self.first = first
        self.rest = rest
        self.input = input
        self.request = request
    }

    func makeAsyncIterator() -> URLRequests { self }

    mutating func next(isolation actor: isolated (any Actor)?) async -> AttachmentRequest? {
        if let url = first {
            first = nil
            return request(url)
        }
        return await rest.next(isolation: actor).map(request)
    }

    mutating func next() async -> AttachmentRequest? { await next(isolation: nil) }
}

/// A batch of URLs, its output written as the descriptors come: a JSON line as each finishes,
/// the JSON document in request order as each one's turn comes, the table and the HTML page
/// at the end (they show every descriptor at once). Only the table and the page keep the
/// descriptors.
struct StreamedRun {
    let format: OutputOptions.Format
    let output: Output

    /// Runs the batch and writes its output; returns how many attachments are not ready.
    func run(_ urls: URLRequests, on pipeline: AttachmentPipeline, deadline: Duration,
             outputDirectory: String?) async throws -> (notReady: Int, count: Int) {
        let output = self.output
        let showProgress = format == .table && isatty(STDERR_FILENO) != 0
        var document = OrderedBatchDocument { output.write($0) }
        var encodingFailure: JSONWriter.Failure?
        var kept: [AttachmentDescriptor?] = []
        var (finished, notReady) = (0, 0)
        let summary = await pipeline.process(streaming: urls, deadline: deadline, outputDirectory: outputDirectory) { index, descriptor in
            finished += 1
            if descriptor.status != .ready { notReady += 1 }
            switch format {
            case .jsonl:
                output.writeJSONLine(descriptor)
            case .json:
                guard encodingFailure == nil else { return }
                do throws(JSONWriter.Failure) { try document.add(index, descriptor) } catch { encodingFailure = error }
            case .table, .html:
                if index >= kept.count { kept += repeatElement(nil, count: index - kept.count + 1) }
                kept[index] = descriptor
                if showProgress {
                    output.writeError("\rattach-fetch: \(finished) done (last: \(descriptor.identifier) \(descriptor.status.rawValue))\u{1B}[K")
                }
            }
        }
        if showProgress { output.writeError("\r\u{1B}[K") }
        let batch = AttachmentBatch(attachments: kept.map { $0! }, elapsed: summary.elapsed, deadline: summary.deadline,
                                    directory: summary.directory)
        switch format {
        case .jsonl:
            break
        case .json:
            if let encodingFailure { throw encodingFailure }
            try document.finish(elapsed: summary.elapsed, deadline: summary.deadline, directory: summary.directory)
            output.write("\n")
        case .table:
            output.write(Table.render(batch))
        case .html:
            let result = try JSONWriter.string(BatchDocument(batch))
            do throws(AttachFetchError) {
                output.write(try InspectorPage.report(kind: .attachments, result: Data(result.utf8), payload: nil,
                                                      descriptors: batch.attachments))
            } catch {
                output.writeError("attach-fetch: cannot write the report: \(error.message)\n")
                throw ExitCode(1)
            }
        }
        return (notReady, summary.count)
    }
}
