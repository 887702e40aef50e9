import Foundation
import Testing
@testable import AttachFetch

/// The JSON descriptor and the reason codes are a public contract.
@Suite struct DescriptorContractTests {
    @Test func reasonCodesAreExactlyTheContractsWithTheirStatuses() {
        let expected: [(String, AttachmentDescriptor.Status)] = [
            ("invalidURL", .rejected), ("unsupportedScheme", .rejected), ("forbiddenAddress", .rejected),
            ("connectFailed", .failed), ("httpStatus", .failed), ("tooManyRedirects", .failed),
            ("transferFailed", .failed), ("timeout", .timedOut), ("deadlineExceeded", .timedOut),
            ("sizeLimitExceeded", .rejected), ("unsupportedType", .rejected), ("corruptMedia", .rejected),
            ("emptyBody", .rejected), ("pixelLimitExceeded", .rejected), ("cancelled", .failed), ("ioError", .failed),
            // Codes are only ever added, at the end: a worker process that died.
            ("decoderCrashed", .rejected),
            // Handshake and certificate failures.
            ("tlsFailed", .failed),
            // Only inside `variants`.
            ("unsupportedOnPlatform", .rejected),
            // The object store refused a ready file.
            ("publishFailed", .failed),
            // The per-host circuit breaker is open.
            ("originUnavailable", .failed),
            // Encryption asked for without a media key.
            ("encryptionUnavailable", .failed),
        ]
        #expect(ReasonCode.allKnown.map(\.rawValue) == expected.map(\.0))
        for (code, status) in expected {
            #expect(ReasonCode(rawValue: code).status == status, "\(code)")
        }
    }

    @Test func fieldNamesAreTheContracts() throws {
        var d = AttachmentDescriptor(identifier: "id", url: "http://x/a.jpg", status: .ready,
                                     timings: .init(total: 5, connect: 1, firstByte: 2, download: 3, thumbnail: 4))
        d.finalUrl = "http://x/b.jpg"
        d.file = "/tmp/a.jpg"
        d.mimeType = "image/jpeg"
        d.declaredMimeType = "text/plain"
        d.kind = .image
        d.uti = "public.jpeg"
        d.fileExtension = "jpg"
        d.bytes = 10
        d.sha256 = "ab"
        d.width = 4
        d.height = 3
        d.thumbnail = .init(file: "/tmp/a.thumb.jpg", width: 4, height: 3)
        let object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(d)) as? [String: Any])
        #expect(Set(object.keys) == ["identifier", "url", "finalUrl", "status", "file", "mimeType", "declaredMimeType",
                                     "kind", "uti", "fileExtension", "bytes", "sha256", "width", "height", "thumbnail", "timings"])
        #expect(Set((object["thumbnail"] as? [String: Any])?.keys ?? [:].keys) == ["file", "width", "height"])
        #expect(Set((object["timings"] as? [String: Any])?.keys ?? [:].keys) == ["total", "connect", "firstByte", "download", "thumbnail"])
        #expect(object["status"] as? String == "ready")
        #expect(object["kind"] as? String == "image")
    }

    /// Fields added for normalizing and probing; the earlier ones keep their names.
    @Test func addedFieldNamesAreTheContracts() throws {
        var d = AttachmentDescriptor(identifier: "id", url: "http://x/a.heic", status: .ready,
                                     timings: .init(total: 5, normalize: 3, probe: 2))
        d.sourceMimeType = "image/heic"
        d.sourceBytes = 20
        d.sourceWidth = 8
        d.sourceHeight = 6
        d.transforms = [.transcoded, .downscaled, .reencoded]
        d.duration = 1.5
        d.videoCodec = "h264"
        d.audioCodec = "aac"
        d.sourceAudioCodec = "Opus"
        d.sourceVideoCodec = "VP9"
        d.thumbnail = .init(file: "/tmp/a.thumb.jpg", width: 4, height: 3, time: 0.5)
        let object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(d)) as? [String: Any])
        #expect(Set(object.keys) == ["identifier", "url", "status", "timings", "thumbnail", "sourceMimeType", "sourceBytes",
                                     "sourceWidth", "sourceHeight", "transforms", "duration", "videoCodec", "audioCodec",
                                     "sourceAudioCodec", "sourceVideoCodec"])
        #expect(object["transforms"] as? [String] == ["transcoded", "downscaled", "reencoded"])
        #expect(Set((object["thumbnail"] as? [String: Any])?.keys ?? [:].keys) == ["file", "width", "height", "time"])
        #expect(Set((object["timings"] as? [String: Any])?.keys ?? [:].keys) == ["total", "normalize", "probe"])
    }

    @Test func failureEncodesReasonAndOmitsUnknownFields() throws {
        let d = AttachmentDescriptor(identifier: "x", url: "ftp://a", status: .rejected,
                                     reason: .init(code: .unsupportedScheme, message: "no"), timings: .init(total: 0))
        let object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(d)) as? [String: Any])
        #expect(Set(object.keys) == ["identifier", "url", "status", "reason", "timings"])
        #expect(object["status"] as? String == "rejected")
        let reason = try #require(object["reason"] as? [String: Any])
        #expect(reason["code"] as? String == "unsupportedScheme")
        #expect(reason["message"] as? String == "no")
        // And it round-trips.
        let decoded = try JSONDecoder().decode(AttachmentDescriptor.self, from: JSONEncoder().encode(d))
        #expect(decoded == d)
    }

    @Test func tableCarriesApplesFormats() {
        #expect(MediaType.all.map(\.uti) == ["public.jpeg", "public.png", "com.compuserve.gif", "public.aiff-audio",
                                             "com.microsoft.waveform-audio", "public.mp3", "public.mpeg-4-audio",
                                             "public.mpeg", "public.mpeg-4", "public.mpeg-4", "public.avi"])
        let limits = AttachFetchConfiguration.SizeLimits()
        #expect(limits.image == 10_485_760 && limits.audio == 5_242_880 && limits.video == 52_428_800)
        #expect(MediaType.forSniffedMIME("image/webp") == nil)
        #expect(MediaType.forSniffedMIME("text/html") == nil)
        #expect(MediaType.forSniffedMIME("audio/x-wav") == .wav)
    }

    @Test func defaultsAreTheDocumentedOnes() {
        let c = AttachFetchConfiguration()
        #expect(c.timeout.connect == .seconds(5) && c.timeout.request == .seconds(10) && c.timeout.stall == .seconds(3))
        #expect(c.maxConcurrentTransfers == 1024 && c.maxHostConnections == 512 && c.maxInflightBytes == 1 << 30)
        #expect(c.maxRedirects == 5 && c.defaultDeadline == .seconds(25))
        #expect(c.thumbnailMaxEdge == 320 && c.maxImagePixels == 50_000_000 && c.allowPrivateNetwork == false)
    }

    @Test func invalidConfigurationIsRefused() {
        // Not withPipeline: each constructor here must throw, so there is no pipeline to shut down.
        var c = AttachFetchConfiguration()
        c.maxConcurrentTransfers = 0
        #expect(throws: AttachFetchError.self) { try AttachmentPipeline(configuration: c) }
        c = AttachFetchConfiguration()
        c.timeout.request = .zero
        #expect(throws: AttachFetchError.self) { try AttachmentPipeline(configuration: c) }
        // The transfer limits: each refusal names its setting.
        for (adjust, name) in [({ (c: inout AttachFetchConfiguration) in c.maxHostConnections = 0 }, "maxHostConnections"),
                               ({ $0.maxHostConnections = -4 }, "maxHostConnections"),
                               ({ $0.maxInflightBytes = 0 }, "maxInflightBytes"),
                               ({ $0.maxInflightBytes = $0.sizeLimits.largest - 1 }, "maxInflightBytes")] {
            var bad = AttachFetchConfiguration()
            adjust(&bad)
            #expect { try bad.validate() } throws: { ($0 as? AttachFetchError)?.message.contains(name) == true }
        }
        // The settings added for converting and probing.
        let added: [(inout AttachFetchConfiguration) -> Void] = [
            { $0.maxNormalizeAttempts = 0 }, { $0.maxVideoDecodeFrames = 0 }, { $0.probeThreads = 0 },
            { $0.sizeLimits.imageSource = 0 },
        ]
        for adjust in added {
            c = AttachFetchConfiguration()
            adjust(&c)
            #expect(throws: AttachFetchError.self) { try AttachmentPipeline(configuration: c) }
        }
        let defaults = AttachFetchConfiguration()
        #expect(defaults.normalize && defaults.maxNormalizeAttempts == 4 && defaults.maxVideoDecodeFrames == 600
                && defaults.probeThreads == 1 && defaults.sizeLimits.imageSource == 41_943_040)
    }

    /// The App Transport Security verdict and its problem codes.
    @Test func atsFieldNamesAreTheContracts() throws {
        var d = AttachmentDescriptor(identifier: "id", url: "http://x/a.jpg", status: .ready, timings: .init(total: 1))
        d.ats = ATSVerdict(problems: [.init(code: ATSVerdict.insecureScheme, message: "plain http")])
        let object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(d)) as? [String: Any])
        let ats = try #require(object["ats"] as? [String: Any])
        #expect(Set(ats.keys) == ["compliant", "problems"])
        #expect(ats["compliant"] as? Bool == false)
        let problem = try #require((ats["problems"] as? [[String: Any]])?.first)
        #expect(Set(problem.keys) == ["code", "message"])
        #expect([ATSVerdict.insecureScheme, ATSVerdict.insecureRedirect, ATSVerdict.tlsVersion, ATSVerdict.cipherNotForwardSecret,
                 ATSVerdict.certificateSignature, ATSVerdict.certificateKeySize]
                == ["insecureScheme", "insecureRedirect", "tlsVersion", "cipherNotForwardSecret", "certificateSignature", "certificateKeySize"])
    }

    /// Fields added for the fan-out (coalescing, cache, publishing, platform variants).
    @Test func fanOutFieldNamesAreTheContracts() throws {
        var d = AttachmentDescriptor(identifier: "id", url: "http://x/a.gif", status: .ready, timings: .init(total: 5, variants: 2))
        d.cache = .coalesced
        d.publishedUrl = "https://cdn.test/ab.gif"
        d.thumbnail = .init(file: "/tmp/a.thumb.jpg", width: 4, height: 3, publishedUrl: "https://cdn.test/cd.thumb.jpg")
        var made = AttachmentDescriptor.Variant()
        made.file = "/tmp/a.android.jpg"
        made.bytes = 9
        made.sha256 = "ef"
        made.mimeType = "image/jpeg"
        made.width = 4
        made.height = 3
        made.transforms = [.transcoded]
        made.publishedUrl = "https://cdn.test/ef.jpg"
        d.variants = ["android": made]
        let object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(d)) as? [String: Any])
        #expect(object["cache"] as? String == "coalesced")
        #expect(object["publishedUrl"] as? String == "https://cdn.test/ab.gif")
        #expect((object["thumbnail"] as? [String: Any])?["publishedUrl"] as? String == "https://cdn.test/cd.thumb.jpg")
        #expect((object["timings"] as? [String: Any])?["variants"] as? Int == 2)
        let variant = try #require((object["variants"] as? [String: Any])?["android"] as? [String: Any])
        #expect(Set(variant.keys) == ["file", "bytes", "sha256", "mimeType", "width", "height", "transforms", "publishedUrl"])
        let unsupported = AttachmentDescriptor.Variant(status: .unsupported, reason: .init(code: .unsupportedOnPlatform, message: "m"))
        let encoded = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(unsupported)) as? [String: Any])
        #expect(Set(encoded.keys) == ["status", "reason"])
        #expect(encoded["status"] as? String == "unsupported")
        #expect((encoded["reason"] as? [String: Any])?["code"] as? String == "unsupportedOnPlatform")
        #expect(Set(["miss", "hit", "revalidated", "coalesced"]) == Set([AttachmentDescriptor.CacheStatus.miss, .hit, .revalidated, .coalesced].map(\.rawValue)))
        // Another replica's result, read from the object store.
        #expect(AttachmentDescriptor.CacheStatus.shared.rawValue == "shared")
    }

    /// The steps the deadline cut short, named as the
    /// `timings` keys are.
    @Test func skippedAtDeadlineNamesTheTimingsSteps() throws {
        var builder = DescriptorBuilder(identifier: "id", url: "http://x/a.mp4", start: .now)
        builder.recordSkippedAtDeadline(.probe)
        builder.recordSkippedAtDeadline(.variants)
        let d = builder.ready(.mp4, file: "/tmp/a.mp4", thumbnail: nil)
        let object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(d)) as? [String: Any])
        #expect(object["skippedAtDeadline"] as? [String] == ["probe", "variants"])
        let timings = AttachmentDescriptor.Timings(total: 1, thumbnail: 1, normalize: 1, probe: 1, variants: 1)
        let keys = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(timings)) as? [String: Any]).keys
        for step in [DescriptorBuilder.TimedStep.normalize, .thumbnail, .probe, .variants] {
            #expect(keys.contains(step.rawValue), "\(step)")
        }
        let plain = DescriptorBuilder(identifier: "id", url: "http://x/a.jpg", start: .now).ready(.jpeg, file: "/tmp/a.jpg", thumbnail: nil)
        #expect(try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(plain)) as? [String: Any])["skippedAtDeadline"] == nil)
    }
}
