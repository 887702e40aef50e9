import Foundation
import LoopbackHTTPServer
import Synchronization
import Testing
@testable import AttachFetch

/// The real-world corpus (scripts/corpus.sh: Pillow's published test images, TestMedia and its
/// cases) served over loopback in batches of 50, each one run of the `attach-fetch` command.
/// Every verdict is checked against independent readers: libvips and FFmpeg's demuxers with
/// their own defaults (what `vips`, `vipsheader` and `ffprobe` answer, in one `media-check`
/// process per batch: Tests/MediaCheck), and `ffmpeg` decoding a whole file. `.ci/run`
/// assembles the corpus first and requires this suite to run.
@Suite struct RealWorldCorpusTests {
    static let repository = URL(fileURLWithPath: testMediaDirectory).deletingLastPathComponent().path
    static let directory: String? = {
        let path = ProcessInfo.processInfo.environment["ATTACH_FETCH_CORPUS"] ?? repository + "/.corpus/files"
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }()
    static let required = ProcessInfo.processInfo.environment["ATTACH_FETCH_CORPUS_REQUIRED"] == "1"

    /// Verdicts that differ from an independent decoder's, each with the reason it is right
    /// (listed in docs/media.md too): name, then reason.
    static let knownDisagreements: [String: String] = {
        let text = (try? String(contentsOfFile: repository + "/Tests/Corpus/known-disagreements.tsv", encoding: .utf8)) ?? ""
        var table: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: "\t", maxSplits: 1)
            if fields.count == 2 { table[String(fields[0])] = String(fields[1]) }
        }
        return table
    }()

    /// The corpus's files, in order.
    static let names: [String] = directory.flatMap { try? FileManager.default.contentsOfDirectory(atPath: $0).sorted() } ?? []

    /// Where each batch of 50 starts in `names`.
    static let batchStarts = Array(stride(from: 0, to: names.count, by: 50))

    @Test func theCorpusIsThereWhenRequired() {
        #expect(!Self.required || Self.directory != nil, "ATTACH_FETCH_CORPUS_REQUIRED=1 but no corpus: run scripts/corpus.sh")
        #expect(Self.directory == nil || Self.names.count > 1000)
    }

    /// Each batch of 50 is one run of the `attach-fetch` command (decoder workers and all), so
    /// that the memory measured is the process tree's own: the command and its workers. Four
    /// batches run at once, beside the rest of the suite, so that the independent readers'
    /// checks of one batch, a process at a time, overlap the others' work; each batch is timed
    /// against its own 20-s deadline (2.4-4.1 s each on two cores, the rest of the suite beside).
    @Test(.enabled(if: directory != nil, "no corpus: run scripts/corpus.sh"))
    func everyFileGetsAVerdictThatIndependentDecodersAgreeWith() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = Self.batchStarts.makeIterator()
            for _ in 0..<4 { if let start = next.next() { group.addTask { try await Self.checkBatch(start: start) } } }
            while try await group.next() != nil {
                if let start = next.next() { group.addTask { try await Self.checkBatch(start: start) } }
            }
        }
    }

    /// One batch of 50: its verdicts, files, time and memory, checked.
    static func checkBatch(start: Int) async throws {
        let corpus = try #require(directory)
        let scratch = Scratch()
        let routes = MediaRoutes(directory: corpus)
        let server = try LoopbackHTTPServer { request, connection in routes.handle(request, connection) }
        defer { server.shutdown() }
        let deadline = 20
        let batchNames = Array(names[start..<min(names.count, start + 50)])
        let directory = scratch.path + "/batch-\(start)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        let urls = scratch.path + "/urls-\(start).txt"
        try batchNames.map { "\(server.baseURL)/media/\($0)\n" }.joined().write(toFile: urls, atomically: true, encoding: .utf8)
        let started = ContinuousClock.now
        let run = try await offPool {
            try runSampled(builtExecutable("attach-fetch"), ["--allow-private-network", "--format", "json", "--platforms", "ios,android", "--input", urls,
                                                            "--out", directory, "--deadline", "\(deadline)"])
        }
        let elapsed = ContinuousClock.now - started
        #expect(run.status == 0 || run.status == 1, "batch at \(start): exit \(run.status)")
        struct Document: Decodable { var attachments: [AttachmentDescriptor] }
        let attachments = try JSONDecoder().decode(Document.self, from: Data(run.output.utf8)).attachments
        #expect(attachments.count == batchNames.count)
        // The command's own start (about 0.1 s) comes on top of the batch's deadline.
        #expect(elapsed <= .seconds(deadline + 1) + .milliseconds(500), "batch at \(start) took \(elapsed)")
        #expect(run.peakBytes <= 400 << 20, "batch at \(start): process tree peaked at \(run.peakBytes >> 20) MiB")
        // The checks start tools and wait for them: off the cooperative pool (offPool), where two
        // batches' waits would hold up every other test's tasks, timers and deadlines included.
        let check = try await offPool { try Self.checkVerdicts(batchNames, attachments, corpus: corpus) }
        #expect(check.crashes.isEmpty, "\(check.crashes.joined(separator: "\n"))")
        // Nothing else is left: no body, no half-made file.
        let kept = Set(try FileManager.default.contentsOfDirectory(atPath: directory))
        #expect(kept == check.expectedFiles, "batch at \(start): stray \(kept.subtracting(check.expectedFiles).sorted())")
        #expect(check.disagreements.isEmpty, "\(check.disagreements.joined(separator: "\n"))")
        print("corpus batch at \(start): \(batchNames.count) files in \(elapsed); verdicts \(check.counts.sorted { $0.key < $1.key }); peak \(run.peakBytes >> 20) MiB (process tree, PSS)")
    }

    /// What the independent readers say of one batch's verdicts.
    struct BatchCheck: Sendable {
        var counts: [String: Int] = [:]
        /// The delivered files and thumbnails, by name.
        var expectedFiles = Set<String>()
        var crashes: [String] = []
        var disagreements: [String] = []
    }

    /// Checks each verdict against the independent readers (one `media-check` process for the
    /// batch). Blocking: it waits on child processes.
    static func checkVerdicts(_ names: [String], _ attachments: [AttachmentDescriptor], corpus: String) throws -> BatchCheck {
        let checker = try MediaChecker()
        defer { checker.close() }
        var check = BatchCheck()
        // Delivered sound and video, by file: decoded by one ffmpeg for the batch, below.
        var toDecode: [String: String] = [:]
        for (name, d) in zip(names, attachments) {
            check.counts[d.reason?.code.rawValue ?? "ready", default: 0] += 1
            if d.transforms?.contains(.partial) == true { check.counts["of them partial", default: 0] += 1 }
            if d.status == .ready, d.kind == .audio || d.kind == .video,
               d.transforms?.contains(.transcoded) == true || d.transforms?.contains(.remuxed) == true {
                check.counts["of them remade (timeline checked)", default: 0] += 1
            }
            if d.reason?.code == .decoderCrashed { check.crashes.append("\(name): \(d.reason?.message ?? "")") }
            if d.status == .ready {
                guard let file = d.file else {
                    check.disagreements.append("\(name): ready without a file")
                    continue
                }
                check.expectedFiles.insert((file as NSString).lastPathComponent)
                if let thumbnail = d.thumbnail { check.expectedFiles.insert((thumbnail.file as NSString).lastPathComponent) }
                for variant in (d.variants ?? [:]).values { if let made = variant.file { check.expectedFiles.insert((made as NSString).lastPathComponent) } }
                if let problem = try checkDelivered(d, file: file, checker: checker) {
                    check.disagreements.append("\(name): \(problem)")
                } else if d.kind == .image {
                    if let problem = try checkRendering(d, original: corpus + "/" + name, checker: checker), knownDisagreements[name] == nil {
                        check.disagreements.append("\(name): \(problem)")
                    }
                } else if d.kind == .audio || d.kind == .video {
                    toDecode[file] = name
                    if let problem = try checkDamage(d, original: corpus + "/" + name) ?? checkTimeline(d, file: file, original: corpus + "/" + name),
                       knownDisagreements[name] == nil {
                        check.disagreements.append("\(name): \(problem)")
                    }
                }
            } else if let problem = try checkRefused(d, original: corpus + "/" + name, checker: checker),
                      knownDisagreements[name] == nil {
                check.disagreements.append("\(name): \(problem)")
            }
        }
        for file in try undecodable(toDecode.keys.sorted()) {
            check.disagreements.append("\(toDecode[file] ?? file): delivered, but ffmpeg does not decode it without error")
        }
        return check
    }

    /// Each picture made of an image (the attachment, its thumbnail, the Android variant when
    /// one is made) against the source as libvips alone renders it for a phone: EXIF
    /// orientation applied, converted to sRGB through its profile, scaled (and for a crop,
    /// placed) the same way (`MediaChecker.difference`). A wrong orientation or a dropped
    /// profile is tens of levels off in the mean; coding and scaling error a few.
    static func checkRendering(_ d: AttachmentDescriptor, original: String, checker: MediaChecker) throws -> String? {
        let outputs = [("attachment", d.file, renderingBound), ("thumbnail", d.thumbnail?.file, renderingBound),
                       ("Android variant", d.variants?["android"]?.file, croppedRenderingBound)]
        for case let (what, file?, bound) in outputs {
            let answer = try checker.difference(source: original, output: file)
            guard answer.ok, let difference = answer.difference else {
                return "the \(what) is delivered, but libvips cannot render it beside its source: \(answer.errors)"
            }
            if difference > bound {
                return "the \(what) is \((difference * 10).rounded() / 10)/255 off the source as libvips renders it (at most \(bound))"
            }
        }
        return nil
    }

    /// The most an output may be off its source as libvips renders it, in the mean.
    static let renderingBound = 6.0
    /// The same for a 2:1 crop (the Android variant), placed where it matches best: small
    /// pictures of text and line art, cut and coded as JPEG, measure up to 16.7 on the corpus;
    /// the same crops of its photographs turned upside down measure 39-75.
    static let croppedRenderingBound = 20.0

    /// Re-encoded sound or video is `partial` exactly when ffmpeg, decoding the source's first
    /// video and first audio stream (the ones a transcode takes), reports errors at its error
    /// level (docs/media.md#damaged-sources). Delivered as it is or remuxed, a file is not
    /// decoded whole here, so its damage is the player's to conceal, as ffmpeg's is.
    static func checkDamage(_ d: AttachmentDescriptor, original: String) throws -> String? {
        guard d.transforms?.contains(.transcoded) == true else { return nil }
        let run = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-i", original, "-map", "0:v:0?", "-map", "0:a:0?", "-f", "null", "-"])
        let errors = run.errors.split(separator: "\n")
        let partial = d.transforms?.contains(.partial) == true
        if partial && errors.isEmpty { return "partial (\(d.sourceDamage ?? "")), but ffmpeg decodes the source without an error" }
        if !partial && !errors.isEmpty { return "transcoded whole, but ffmpeg reports \(errors.count) errors decoding the source: \(errors.prefix(2).joined(separator: " / "))" }
        return nil
    }

    /// The files that `ffmpeg -xerror` does not decode without error, each file's first video
    /// and first audio stream (all that a delivered file has, so what ffmpeg would choose): one
    /// ffmpeg for them all, its start costing more than decoding a short clip, then one per file
    /// to name the file when that fails.
    static func undecodable(_ files: [String]) throws -> [String] {
        guard !files.isEmpty else { return [] }
        var inputs: [String] = [], maps: [String] = []
        for (index, file) in files.enumerated() {
            inputs += ["-i", file]
            maps += ["-map", "\(index):v:0?", "-map", "\(index):a:0?"]
        }
        if try tool("/usr/bin/ffmpeg", ["-v", "error", "-xerror"] + inputs + maps + ["-f", "null", "-"]).status == 0 { return [] }
        return try files.filter { try tool("/usr/bin/ffmpeg", ["-v", "error", "-xerror", "-i", $0, "-f", "null", "-"]).status != 0 }
    }

    /// A delivered file: its bytes and hash as described, its extension its type's, and (an
    /// image) it decodes in full with an independent tool, at the size the descriptor gives.
    static func checkDelivered(_ d: AttachmentDescriptor, file: String, checker: MediaChecker) throws -> String? {
        guard fileSize(file) == d.bytes else { return "size \(fileSize(file)) but the descriptor says \(d.bytes ?? -1)" }
        guard try sha256sum(file) == d.sha256 else { return "SHA-256 differs from the descriptor's" }
        guard let type = (MediaType.all).first(where: { $0.mimeType == d.mimeType }),
              (file as NSString).pathExtension == type.fileExtension, d.fileExtension == type.fileExtension else {
            return "extension .\((file as NSString).pathExtension) does not fit \(d.mimeType ?? "-")"
        }
        switch type.kind {
        case .image:
            guard try checker.average(vipsInput(file, mime: type.mimeType)).ok else {
                return "delivered, but `vips avg` with fail_on=error does not decode it"
            }
            let size = try checker.displaySize(file)
            guard size.width == d.width, size.height == d.height else {
                return "descriptor says \(d.width ?? -1)x\(d.height ?? -1), vips \(size.width)x\(size.height)"
            }
        case .audio, .video:
            // Whether ffmpeg decodes it: `undecodable`, for the whole batch at once.
            if type.kind == .video, let size = try ffprobeDisplaySize(file), size.width != d.width || size.height != d.height {
                return "descriptor says \(d.width ?? -1)x\(d.height ?? -1), ffprobe \(size.width)x\(size.height)"
            }
        }
        return nil
    }

    /// A refused file of a type attach-fetch handles: refused as damaged while an independent
    /// decoder reads it in full is a disagreement (refusals by the table, the limits or the
    /// budgets are decisions, not disagreements).
    static func checkRefused(_ d: AttachmentDescriptor, original: String, checker: MediaChecker) throws -> String? {
        if d.reason?.code == .unsupportedType { return try checkUnsupported(d, original: original, checker: checker) }
        guard d.reason?.code == .corruptMedia, let mime = d.mimeType else { return nil }
        if let type = MediaType.forSniffedMIME(mime) ?? MediaType.convertibleForSniffedMIME(mime), type.kind == .image {
            // JPEG by the decision in docs/media.md: any libjpeg warning refuses it, but for extraneous
            // bytes before a marker (then fail_on=error decides).
            if mime == "image/jpeg" {
                let strict = try checker.average("\(original)[fail_on=warning]")
                if strict.ok { return "corruptMedia (\(d.reason?.message ?? "")), but `vips avg` with fail_on=warning decodes it" }
                guard strict.errors.contains("extraneous bytes before marker"), !strict.errors.contains("premature end") else { return nil }
            }
            let decoded = try checker.average(vipsInput(original, mime: mime)).ok
            return decoded ? "corruptMedia (\(d.reason?.message ?? "")), but `vips avg` with fail_on=error decodes it" : nil
        }
        if MediaType.forSniffedMIME(mime) != nil {
            let decoded = try tool("/usr/bin/ffmpeg", ["-v", "error", "-xerror", "-i", original, "-f", "null", "-"]).status == 0
            return decoded ? "corruptMedia (\(d.reason?.message ?? "")), but ffmpeg decodes it without error" : nil
        }
        return nil
    }

    /// A file refused as a type attach-fetch does not take, while an independent tool reads it
    /// as one it does: a PNG, JPEG or GIF that vips decodes, or an MP3, MPEG-4/QuickTime/3GPP
    /// or MPEG transport stream whose every stream is a codec MPEG-4 carries and that ffmpeg
    /// decodes without error. (What iOS cannot show, such as AV1, H.263 or PCM in a movie, is
    /// not such a codec: refusing it is the table's decision.)
    static func checkUnsupported(_ d: AttachmentDescriptor, original: String, checker: MediaChecker) throws -> String? {
        let loader = try checker.header(original).loader ?? ""
        if ["pngload", "jpegload", "gifload"].contains(loader) {
            let mime = ["pngload": "image/png", "jpegload": "image/jpeg", "gifload": "image/gif"][loader]!
            if try checker.average(vipsInput(original, mime: mime)).ok {
                return "unsupportedType (\(d.reason?.message ?? "")), but vips reads it with \(loader)"
            }
            return nil
        }
        // An image in a format the table does not take (TIFF, BMP, JPEG 2000, ...) is that image,
        // not audio or video: no probe for it.
        if !loader.isEmpty { return nil }
        // What ffprobe reads (the checker's `probe`, as `ffprobe -show_entries
        // format=format_name:stream=codec_type,codec_name` answers).
        let probe = try checker.probe(original)
        guard probe.ok, let format = probe.format else { return nil }
        let carried: Set<String> = ["h264", "hevc", "mpeg4", "aac", "mp3", "alac", "ac3"]
        // An MP3's cover art is a picture, not a stream of the delivery.
        let media = Array(Set((probe.streams ?? []).filter { $0.type == "audio" || ($0.type == "video" && format != "mp3") }.map(\.codec))).sorted()
        guard ["mp3", "mpegts"].contains(format) || format.hasPrefix("mov,mp4"), !media.isEmpty,
              media.allSatisfy(carried.contains) else { return nil }
        guard try tool("/usr/bin/ffmpeg", ["-v", "error", "-xerror", "-i", original, "-f", "null", "-"]).status == 0 else { return nil }
        // H.264 or HEVC that iOS cannot play (profile, sample format, hev1 tag): ffprobe must say
        // so too, by the same table (docs/media.md#what-ios-plays), for the refusal to stand.
        if try notPlayableByFFprobe(original) { return nil }
        return "unsupportedType (\(d.reason?.message ?? "")), but ffprobe reads \(format) with \(media.joined(separator: " + ")), which MPEG-4 carries"
    }

    /// Whether ffprobe reads a video stream that iOS cannot play as delivered: H.264 above High
    /// profile or not 8-bit 4:2:0, HEVC other than Main or Main 10 in 4:2:0, or HEVC tagged hev1.
    static func notPlayableByFFprobe(_ file: String) throws -> Bool {
        let read = try tool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries",
                                                 "stream=codec_name,profile,pix_fmt,codec_tag_string", "-of", "compact=p=0", file])
        guard read.status == 0 else { return false }
        return read.output.split(separator: "\n").contains { line in
            // codec_name=h264|profile=High|codec_tag_string=avc1|pix_fmt=yuv420p, in ffprobe's order.
            let fields = Dictionary(line.split(separator: "|").map { field -> (String, String) in
                let parts = field.split(separator: "=", maxSplits: 1).map(String.init)
                return (parts[0], parts.count > 1 ? parts[1] : "")
            }) { first, _ in first }
            let profile = fields["profile"] ?? "", format = fields["pix_fmt"] ?? ""
            switch fields["codec_name"] {
            case "h264": return !["Baseline", "Constrained Baseline", "Main", "High"].contains(profile) || !["yuv420p", "yuvj420p"].contains(format)
            case "hevc": return !["Main", "Main 10"].contains(profile) || !["yuv420p", "yuvj420p", "yuv420p10le"].contains(format)
                || fields["codec_tag_string"] == "hev1"
            default: return false
            }
        }
    }

    /// vips' input with its options: every frame of an animation (GIF, WebP), failing on errors.
    static func vipsInput(_ file: String, mime: String) -> String {
        ["image/gif", "image/webp"].contains(mime) ? "\(file)[n=-1,fail_on=error]" : "\(file)[fail_on=error]"
    }
}
