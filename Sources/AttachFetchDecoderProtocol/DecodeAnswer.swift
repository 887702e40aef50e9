import AttachFetchCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a decode job made, or why it failed: exactly one of the fields is set.
package struct DecodeAnswer: Codable, Sendable {
    package var failure: Reason?
    package var thumbnail: ThumbnailOutcome?
    package var normalized: NormalizedImage?
    package var probed: ProbeOutcome?
    package var remuxed: RemuxedVideo?
    package var transcoded: TranscodedMedia?
    /// The keeper's sealed copies of the files the answer names (`AnswerCheck`), which the
    /// answer's paths now stand for: the pipeline owns them. Never on the wire.
    package var sealed: [UnnamedFile] = []
    /// The worker's own outputs the sealed copies replace: the pipeline lets them go.
    package var superseded: [String] = []

    private enum CodingKeys: String, CodingKey { case failure, thumbnail, normalized, probed, remuxed, transcoded }

    package init(failure: Reason) { self.failure = failure }

    package init<Value>(_ result: Result<Value, Reason>, _ field: WritableKeyPath<DecodeAnswer, Value?>) {
        switch result {
        case .success(let value): self[keyPath: field] = value
        case .failure(let problem): failure = problem
        }
    }

    /// The outcome at `field`, or the failure.
    package func result<Value>(_ field: KeyPath<DecodeAnswer, Value?>) -> Result<Value, Reason> {
        if let value = self[keyPath: field] { return .success(value) }
        return .failure(failure ?? Reason(code: .ioError, message: "the decoder gave no answer"))
    }

    /// Files the answer hands over (removed when nobody takes them).
    package var files: [String] {
        [thumbnail?.file, normalized?.file, probed?.poster?.file, remuxed?.file, transcoded?.file].compactMap { $0 }
    }

    /// The same answer with `old`, wherever it names it, as `new`.
    package mutating func replacePath(_ old: String, with new: String) {
        self = mappingFiles { $0 == old ? new : $0 }
    }

    /// The same answer with each working path's descriptor replaced (a worker's copy back to
    /// the pipeline's descriptor).
    package func replacingDescriptors(_ replacement: [Int32: Int32]) -> DecodeAnswer {
        mappingFiles { UnnamedFile.replacingDescriptor(in: $0, replacement) }
    }

    /// The same answer with every file it names passed through `map`.
    private func mappingFiles(_ map: (String) -> String) -> DecodeAnswer {
        var answer = self
        if let file = answer.thumbnail?.file { answer.thumbnail?.file = map(file) }
        if let file = answer.normalized?.file { answer.normalized?.file = map(file) }
        if let file = answer.probed?.poster?.file { answer.probed?.poster?.file = map(file) }
        if let file = answer.remuxed?.file { answer.remuxed?.file = map(file) }
        if let file = answer.transcoded?.file { answer.transcoded?.file = map(file) }
        return answer
    }

    /// A reason message never shows working paths: the decoders' messages may name the
    /// downloaded file or an output file, which mean nothing to the caller.
    package func withoutWorkingPaths(source: String, outputBase: String?) -> DecodeAnswer {
        guard let failure else { return self }
        // `replacing` an empty pattern would insert the text between every character.
        var message = source.isEmpty ? failure.message : failure.message.replacing(source, with: "the downloaded file")
        if let outputBase, !outputBase.isEmpty { message = message.replacing(outputBase, with: "the output file") }
        let directory = source.lastIndex(of: "/").map { String(source[..<$0]) } ?? ""
        if !directory.isEmpty { message = message.replacing(directory + "/", with: "") }
        var answer = self
        answer.failure = Reason(code: failure.code, message: message)
        return answer
    }
}
