@testable import AttachFetch
@testable import AttachFetchService
import Foundation
import Testing
import TestHelpers

/// `JSONWriter` writes every JSON document of the project (plain values and `JSONValue`:
/// Core's `JSONValueTests`). Every document type, with every optional field present
/// or absent, hostile strings and awkward numbers, is written, read back and compared.
@Suite struct JSONWriterTests {
    /// The same documents on every run.
    private typealias Seeded = SeededRandom

    private static func maybe<T>(_ random: inout Seeded, _ make: (inout Seeded) -> T) -> T? {
        Bool.random(using: &random) ? make(&random) : nil
    }

    private static func reason(_ random: inout Seeded) -> AttachmentDescriptor.Reason {
        .init(code: ReasonCode.allKnown.randomElement(using: &random)!, message: JSONSamples.string(&random))
    }

    private static func descriptor(_ random: inout Seeded) -> AttachmentDescriptor {
        let int: (inout Seeded) -> Int = { Int.random(in: -5...Int.max, using: &$0) }
        let bytes: (inout Seeded) -> Int64 = { Int64.random(in: 0...Int64.max, using: &$0) }
        var d = AttachmentDescriptor(identifier: JSONSamples.string(&random), url: JSONSamples.string(&random),
                                     status: [.ready, .failed, .rejected, .timedOut].randomElement(using: &random)!,
                                     reason: maybe(&random, reason),
                                     timings: .init(total: int(&random), connect: maybe(&random, int), firstByte: maybe(&random, int),
                                                    download: maybe(&random, int), thumbnail: maybe(&random, int),
                                                    normalize: maybe(&random, int), probe: maybe(&random, int),
                                                    variants: maybe(&random, int)))
        d.timings.queued = maybe(&random, int)
        d.finalUrl = maybe(&random, JSONSamples.string)
        d.file = maybe(&random, JSONSamples.string)
        d.mimeType = maybe(&random, JSONSamples.string)
        d.declaredMimeType = maybe(&random, JSONSamples.string)
        d.kind = maybe(&random) { [.image, .audio, .video].randomElement(using: &$0)! }
        d.uti = maybe(&random, JSONSamples.string)
        d.fileExtension = maybe(&random, JSONSamples.string)
        d.bytes = maybe(&random, bytes)
        d.sha256 = maybe(&random, JSONSamples.string)
        d.width = maybe(&random, int)
        d.height = maybe(&random, int)
        let encryption: (inout Seeded) -> AttachmentDescriptor.Encryption = {
            .init(scheme: JSONSamples.string(&$0), key: JSONSamples.string(&$0), recordSize: int(&$0))
        }
        d.thumbnail = maybe(&random) {
            var thumbnail = AttachmentDescriptor.Thumbnail(file: JSONSamples.string(&$0), width: int(&$0), height: int(&$0), time: maybe(&$0, JSONSamples.double),
                                                           publishedUrl: maybe(&$0, JSONSamples.string))
            thumbnail.publishedBytes = maybe(&$0, bytes)
            thumbnail.encryption = maybe(&$0, encryption)
            return thumbnail
        }
        d.role = maybe(&random) { [.attachment, .avatar].randomElement(using: &$0)! }
        d.options = maybe(&random) { random in
            .init(clippingRect: maybe(&random) { r in
                      .init(x: Double.random(in: 0...0.5, using: &r), y: Double.random(in: 0...0.5, using: &r),
                            width: Double.random(in: 0.01...0.5, using: &r), height: 0.25)
                  },
                  thumbnailTime: maybe(&random, JSONSamples.double), thumbnailHidden: maybe(&random) { Bool.random(using: &$0) })
        }
        d.payloadPath = maybe(&random, JSONSamples.string)
        d.sourceMimeType = maybe(&random, JSONSamples.string)
        d.sourceBytes = maybe(&random, bytes)
        d.sourceWidth = maybe(&random, int)
        d.sourceHeight = maybe(&random, int)
        d.sourceDamage = maybe(&random, JSONSamples.string)
        let transforms: (inout Seeded) -> [AttachmentDescriptor.Transform] = { random in
            (0..<Int.random(in: 0...3, using: &random)).map { _ in
                AttachmentDescriptor.Transform.allCases.randomElement(using: &random)!
            }
        }
        d.transforms = maybe(&random, transforms)
        d.duration = maybe(&random, JSONSamples.double)
        d.statedDuration = maybe(&random, JSONSamples.double)
        d.videoCodec = maybe(&random, JSONSamples.string)
        d.sourceAudioCodec = maybe(&random, JSONSamples.string)
        d.sourceVideoCodec = maybe(&random, JSONSamples.string)
        d.audioCodec = maybe(&random, JSONSamples.string)
        d.ats = maybe(&random) { random in
            .init(problems: (0..<Int.random(in: 0...2, using: &random)).map { _ in .init(code: JSONSamples.string(&random), message: JSONSamples.string(&random)) })
        }
        d.cache = maybe(&random) { [.miss, .hit, .revalidated, .coalesced, .shared].randomElement(using: &$0)! }
        d.skippedAtDeadline = maybe(&random) { random in
            (0..<Int.random(in: 0...3, using: &random)).map { _ in ["thumbnail", "probe", "variants"].randomElement(using: &random)! }
        }
        d.thumbnailClip = maybe(&random) { random in
            try! ClippingRectangle(x: Double.random(in: 0...0.5, using: &random), y: Double.random(in: 0...0.5, using: &random),
                                   width: 0.5, height: Double.random(in: 0.1...0.5, using: &random))
        }
        d.publishedUrl = maybe(&random, JSONSamples.string)
        d.publishedBytes = maybe(&random, bytes)
        d.encryption = maybe(&random, encryption)
        d.variants = maybe(&random) { random in
            var variants: [String: AttachmentDescriptor.Variant] = [:]
            for _ in 0..<Int.random(in: 0...3, using: &random) {
                var variant = AttachmentDescriptor.Variant(status: maybe(&random) { [.unsupported, .failed].randomElement(using: &$0)! },
                                                           reason: maybe(&random, reason))
                variant.file = maybe(&random, JSONSamples.string)
                variant.bytes = maybe(&random, bytes)
                variant.sha256 = maybe(&random, JSONSamples.string)
                variant.mimeType = maybe(&random, JSONSamples.string)
                variant.width = maybe(&random, int)
                variant.height = maybe(&random, int)
                variant.transforms = maybe(&random, transforms)
                variant.publishedUrl = maybe(&random, JSONSamples.string)
                variant.publishedBytes = maybe(&random, bytes)
                variant.encryption = maybe(&random, encryption)
                variants[JSONSamples.string(&random)] = variant
            }
            return variants
        }
        return d
    }

    @Test func documentsReadBackAsTheyWereWritten() throws {
        var random = Seeded(state: 14)
        for _ in 0..<300 {
            let descriptors = (0..<Int.random(in: 0...3, using: &random)).map { _ in Self.descriptor(&random) }
            for descriptor in descriptors {
                let written = try JSONWriter.data(descriptor)
                let read = try JSONDecoder().decode(AttachmentDescriptor.self, from: written)
                #expect(try JSONWriter.data(read) == written)
            }
            let batch = AttachmentBatch(attachments: descriptors, elapsed: .milliseconds(Int.random(in: 0...99_999, using: &random)),
                                        deadline: .seconds(25), directory: Self.maybe(&random, JSONSamples.string))
            let written = try JSONWriter.string(BatchDocument(batch, lint: nil))
            let read = try #require(try JSONSerialization.jsonObject(with: Data(written.utf8)) as? [String: Any])
            #expect((read["attachments"] as? [Any])?.count == descriptors.count)
            #expect(read["elapsedMs"] as? Int == batch.elapsed.wholeMilliseconds)
            #expect(read["payload"] == nil && read["lint"] == nil, "absent fields are left out")
        }
    }

    /// The descriptor and the batch document write their own compact JSON (for the speed of a
    /// cache hit): it must be `JSONEncoder`'s, byte for byte, whatever the fields hold.
    @Test func theDescriptorsOwnWriterWritesWhatJSONEncoderWrites() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var random = Seeded(state: 16)
        // Every stored property, by type, must turn up in the generated documents: a field added to
        // a type and not to the generator (so, perhaps, not to the writer) fails here.
        var seen: [String: Set<String>] = [:]
        var alwaysWritten: Set<String> = []
        for round in 0..<2_000 {
            let descriptor = Self.descriptor(&random)
            let reference = try encoder.encode(descriptor)
            let written = try JSONWriter.data(descriptor)
            #expect(written == reference, "round \(round): \(String(decoding: written, as: UTF8.self)) against \(String(decoding: reference, as: UTF8.self))")
            if written != reference { return }
            let object = try #require(try JSONSerialization.jsonObject(with: reference) as? [String: Any])
            seen["descriptor", default: []].formUnion(object.keys)
            alwaysWritten = round == 0 ? Set(object.keys) : alwaysWritten.intersection(object.keys)
            seen["thumbnail", default: []].formUnion((object["thumbnail"] as? [String: Any])?.keys ?? [:].keys)
            seen["timings", default: []].formUnion((object["timings"] as? [String: Any])?.keys ?? [:].keys)
            for variant in (object["variants"] as? [String: [String: Any]] ?? [:]).values { seen["variant", default: []].formUnion(variant.keys) }
        }
        let properties: [(String, Any)] = [
            ("descriptor", AttachmentDescriptor(identifier: "", url: "", status: .ready, timings: .init(total: 0))),
            ("thumbnail", AttachmentDescriptor.Thumbnail(file: "", width: 0, height: 0)),
            ("timings", AttachmentDescriptor.Timings(total: 0)), ("variant", AttachmentDescriptor.Variant()),
        ]
        for (name, value) in properties {
            let stored = Set(Mirror(reflecting: value).children.compactMap(\.label))
            #expect(stored.subtracting(seen[name] ?? []).isEmpty, "\(name): never generated: \(stored.subtracting(seen[name] ?? []))")
        }
        // docs/descriptor.md's field table names exactly the fields the writer writes, both ways:
        // the descriptor's in the first column, and the timings', the thumbnail's and the
        // variants' in their rows.
        let table = try DocumentedNames.descriptorFieldTable()
        // `present: always` exactly for the fields every generated document has.
        let always = Set(table.filter { $0.value.split(separator: "|").dropFirst().first?.trimmingCharacters(in: .whitespaces) == "always" }.keys)
        #expect(always == alwaysWritten, "documented as always present: \(always.sorted()); written in every document: \(alwaysWritten.sorted())")
        #expect(Set(table.keys) == seen["descriptor"], "documented, not written: \(Set(table.keys).subtracting(seen["descriptor"] ?? [])); written, not documented: \((seen["descriptor"] ?? []).subtracting(table.keys))")
        for (row, name) in [("timings", "timings"), ("thumbnail", "thumbnail"), ("variants", "variant")] {
            let documented = DocumentedNames.namesIn(table[row] ?? "")
            let missing = (seen[name] ?? []).subtracting(documented)
            #expect(missing.isEmpty, "\(row): written, not documented in its row: \(missing)")
        }
        for _ in 0..<200 {
            let batch = AttachmentBatch(attachments: (0..<Int.random(in: 0...3, using: &random)).map { _ in Self.descriptor(&random) },
                                        elapsed: .milliseconds(Int.random(in: 0...99_999, using: &random)),
                                        deadline: .milliseconds(Int.random(in: 1...99_999, using: &random)),
                                        directory: Self.maybe(&random, JSONSamples.string))
            let document = BatchDocument(batch)
            #expect(try JSONWriter.string(document) == String(decoding: try encoder.encode(document), as: UTF8.self))
        }
        // The writer is the one used: a document with lint is left to the encoder, and says so by
        // being the encoder's too.
        var linted = BatchDocument(AttachmentBatch(attachments: [], elapsed: .zero, deadline: .seconds(1), directory: nil),
                                   lint: [])
        #expect(try JSONWriter.data(linted) == encoder.encode(linted))
        linted.lint = nil
        var json = CompactJSON()
        linted.write(to: &json)
        #expect(!json.failed && String(decoding: json.bytes, as: UTF8.self) == #"{"attachments":[],"deadlineMs":1000,"elapsedMs":0}"#)
    }

    @Test func aDescriptorWithANumberJSONCannotCarryIsRefusedAsTheEncoderRefusesIt() {
        var descriptor = AttachmentDescriptor(identifier: "a", url: "http://127.0.0.1/a.mp4", status: .ready, timings: .init(total: 1))
        descriptor.duration = .nan
        #expect(throws: JSONWriter.Failure.self) { try JSONWriter.data(descriptor) }
        descriptor.duration = nil
        descriptor.thumbnail = .init(file: "/t.jpg", width: 1, height: 1, time: .infinity)
        #expect(throws: JSONWriter.Failure.self) { try JSONWriter.string(BatchDocument(AttachmentBatch(
            attachments: [descriptor], elapsed: .zero, deadline: .seconds(1), directory: nil))) }
    }

    @Test func aPayloadIsPlacedIntoTheDocumentByEncoding() throws {
        let payload = Data(#"{"aps":{"alert":{"title":"a/b \"q\""},"badge":3,"big":18446744073709551615,"x":1.5,"n":null,"t":true},"media":["http://127.0.0.1/a.jpg"]}"#.utf8)
        var document = BatchDocument(AttachmentBatch(attachments: [], elapsed: .zero, deadline: .seconds(1), directory: nil))
        document.payload = try JSONValue(json: payload)
        let written = try JSONWriter.data(document)
        let read = try #require(try JSONSerialization.jsonObject(with: written) as? NSDictionary)
        let original = try #require(try JSONSerialization.jsonObject(with: payload) as? NSDictionary)
        #expect(read["payload"] as? NSDictionary == original)
        #expect(String(decoding: written, as: UTF8.self).contains(#""big":18446744073709551615"#), "integers stay exact")
    }
}
