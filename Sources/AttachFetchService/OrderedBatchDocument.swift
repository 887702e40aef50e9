import AttachFetch

/// `BatchDocument`'s indented JSON (without lint or payload), written as the descriptors
/// come instead of once at the end: each descriptor is written as soon as every one before it
/// in request order has been, so a batch of any length is never held as one document. The
/// bytes are `JSONWriter.string(BatchDocument(batch), layout: .pretty)`'s.
package struct OrderedBatchDocument {
    private let write: (String) -> Void
    /// The index written next.
    private var nextIndex = 0
    /// Descriptors finished ahead of their turn.
    private var waiting: [Int: AttachmentDescriptor] = [:]

    /// - Parameter write: given the document's text piece by piece, in order.
    package init(write: @escaping (String) -> Void) { self.write = write }

    /// Adds the descriptor of request `index` (each index once, in any order).
    package mutating func add(_ index: Int, _ descriptor: AttachmentDescriptor) throws(JSONWriter.Failure) {
        waiting[index] = descriptor
        while let next = waiting.removeValue(forKey: nextIndex) {
            let text = try JSONWriter.string(next, layout: .pretty)
            // One level deeper than alone: inside the document's object and its array.
            let indented = text.split(separator: "\n", omittingEmptySubsequences: false)
                .map { $0.isEmpty ? "" : "    " + $0 }.joined(separator: "\n")
            write((nextIndex == 0 ? "{\n  \"attachments\" : [\n" : ",\n") + indented)
            nextIndex += 1
        }
    }

    /// Ends the document once every descriptor was added (no line break after it).
    package mutating func finish(elapsed: Duration, deadline: Duration, directory: String?) throws(JSONWriter.Failure) {
        precondition(waiting.isEmpty, "every descriptor before the last was added")
        guard nextIndex > 0 else {
            let empty = AttachmentBatch(attachments: [], elapsed: elapsed, deadline: deadline, directory: directory)
            return write(try JSONWriter.string(BatchDocument(empty), layout: .pretty))
        }
        // The keys after "attachments", written by the same encoder at the same depth.
        let rest = try JSONWriter.string(Rest(deadlineMs: deadline.wholeMilliseconds, directory: directory,
                                              elapsedMs: elapsed.wholeMilliseconds), layout: .pretty)
        write("\n  ],\n" + rest.dropFirst(2))
    }

    private struct Rest: Encodable {
        var deadlineMs: Int
        var directory: String?
        var elapsedMs: Int
    }
}
