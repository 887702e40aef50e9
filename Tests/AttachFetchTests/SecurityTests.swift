import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

/// Every URL and every byte is hostile. End-to-end traffic goes to loopback only, with the
/// address policy on, so that even a broken policy can reach nothing but this machine; other
/// ranges are checked on the policy and classifier directly.
@Suite struct SecurityTests {
    @Test func loopbackInEveryNumericDisguiseIsRefusedBeforeConnecting() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch, loopback: false) { pipeline in
            try await withMediaServer { server in
                let p = server.port
                let disguises = ["127.0.0.1", "127.1", "2130706433", "0x7f000001", "0x7f.1", "017700000001", "127.000.000.001",
                                 "localhost", "[::1]", "[::ffff:127.0.0.1]", "[0:0:0:0:0:ffff:7f00:1]"]
                for host in disguises {
                    let d = await fetchOne("http://\(host):\(p)/media/photo.jpg", pipeline)
                    #expect(d.reason?.code == .forbiddenAddress || d.reason?.code == .invalidURL,
                            "\(host): \(d.reason?.code.rawValue ?? "ready") \(d.reason?.message ?? "")")
                    #expect(d.status == .rejected)
                }
                #expect(server.acceptedConnections == 0, "a disguised loopback address got through")
            }
        }
    }

    @Test func allowListOpensOneRangeAndRedirectsOutOfItAreRefused() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch, loopback: false, { $0.allowedRanges = [try! CIDRRange("127.0.0.1/32")] }) { pipeline in
            try await withMediaServer { server in
                let p = server.port
                #expect(await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline).status == .ready)
                // 127.0.0.2 and ::1 are loopback too but not allowed. Nothing listens there, so a
                // broken policy would show as connectFailed instead.
                for target in ["http://127.0.0.2:\(p)/media/photo.jpg", "http://[::1]:\(p)/media/photo.jpg"] {
                    let d = await fetchOne("\(server.baseURL)/redirect-to?url=\(target)", pipeline)
                    #expect(d.reason?.code == .forbiddenAddress, "\(target): \(d.reason?.message ?? "ready")")
                }
            }
        }
    }

    @Test func denyListWinsOverEveryAllowance() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch, loopback: false, {
            $0.allowPrivateNetwork = true
            $0.allowedRanges = [try! CIDRRange("127.0.0.1")]
            $0.deniedRanges = [try! CIDRRange("127.0.0.0/8")]
        }) { pipeline in
            try await withMediaServer { server in
                let d = await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline)
                #expect(d.reason?.code == .forbiddenAddress)
                #expect(d.reason?.message.contains("denied range 127.0.0.0/8") == true)
                #expect(server.acceptedConnections == 0)
            }
        }
    }

    @Test(arguments: [
        "169.254.169.254", "fd00:ec2::254", "100.100.100.200", "10.0.0.5", "192.168.0.1", "172.16.5.4",
        "::ffff:169.254.169.254", "::ffff:10.0.0.1", "fe80::1", "fc00::1", "224.0.0.251", "0.0.0.0", "::",
        "255.255.255.255", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1",
    ])
    func defaultPolicyRefusesPrivateAndMetadataAddresses(address: String) {
        #expect(AddressPolicy().refusal(for: address) != nil, "\(address)")
        #expect(AddressPolicy(allowPrivateNetwork: true).refusal(for: address) == nil)
    }

    @Test func policyListsMatchAddressesAndTheirMappedForms() throws {
        let policy = AddressPolicy(allowPrivateNetwork: true, deniedRanges: [try CIDRRange("10.0.0.0/8"), try CIDRRange("2001:db8::/32")])
        #expect(policy.refusal(for: "10.1.2.3") != nil)
        #expect(policy.refusal(for: "::ffff:10.1.2.3") != nil)
        #expect(policy.refusal(for: "2001:db8::1") != nil)
        #expect(policy.refusal(for: "11.0.0.1") == nil)
        let allowInternal = AddressPolicy(allowedRanges: [try CIDRRange("10.20.0.0/16")])
        #expect(allowInternal.refusal(for: "10.20.30.40") == nil)
        #expect(allowInternal.refusal(for: "10.21.0.1") != nil)
        #expect(AddressPolicy().refusal(for: "8.8.8.8") == nil)
        #expect(AddressPolicy().refusal(for: "2606:4700::1111") == nil)
        for bad in ["10.0.0.0/33", "::/129", "example.com", "10.0.0.0/", "1.2.3.4/-1", ""] {
            #expect(throws: AttachFetchError.self, "\(bad)") { try CIDRRange(bad) }
        }
        #expect(try CIDRRange("10.1.2.3/8").description == "10.0.0.0/8")
    }

    @Test func credentialsAreNotSentToAnotherHostAfterARedirect() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let p = server.port
                let d = await fetchOne("http://user:secret@127.0.0.1:\(p)/redirect-to?url=http://localhost:\(p)/media/photo.jpg", pipeline)
                #expect(d.status == .ready)
                let log = server.requestHeaderLog
                #expect(log.count == 2)
                #expect(log.first?["authorization"]?.hasPrefix("Basic ") == true)
                #expect(log.last?["authorization"] == nil)
            }
        }
    }

    @Test func compressedBodiesAreNeitherRequestedNorDecoded() async throws {
        let media = Scratch()
        let scratch = Scratch()
        let mediaPath = media.path
        // A gzip bomb: 100 MB of zeros in about 100 KB.
        try await offPool {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "head -c 100000000 /dev/zero | gzip -c > '\(mediaPath)/bomb.gz'"]
            try process.run()
            process.waitUntilExit()
        }
        let routes = MediaRoutes(directory: media.path)
        let server = try LoopbackHTTPServer { request, connection in routes.handle(request, connection) }
        try await withPipeline(scratch) { pipeline in
            let d = await fetchOne("\(server.baseURL)/media/bomb.gz?encoding=gzip&type=image/png&tag=bomb", pipeline)
            let headers = server.requestHeaderLog
            try await offPool { server.shutdown() }
            #expect(d.reason?.code == .unsupportedType, "\(d.reason?.message ?? "ready")")
            #expect(d.mimeType == "application/gzip")
            #expect(headers.first?["accept-encoding"] == nil)
            #expect(scratch.tree() == [])
        }
    }

    @Test func hugeResponseHeadersAreCut() async throws {
        let scratch = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let d = await fetchOne("\(server.baseURL)/fault/huge-headers", pipeline)
                #expect(d.reason?.code == .transferFailed)
                #expect(d.reason?.message.contains("headers exceed") == true, "\(d.reason?.message ?? "")")
            }
        }
    }

    @Test func onlyTheTablesDecodersRunEvenOnFilesTheSnifferWouldRefuse() async throws {
        let scratch = Scratch()
        try await startLibraries() // libvips with its loaders restricted
        let svg = "\(scratch.path)/image.svg"
        try Data("<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'><rect width='10' height='10'/></svg>".utf8)
            .write(to: URL(fileURLWithPath: svg))
        let limits = ThumbnailLimits(AttachFetchConfiguration())
        // WebP and HEIF are enabled, for conversion only; PDF, SVG and the rest stay blocked.
        for source in ["\(testMediaDirectory)/document.pdf", svg] {
            let result = Thumbnailer.make(source: source, destinationBase: "\(scratch.path)/thumb", shape: .clip(.whole), limits: limits)
            guard case .failure(let failure) = result else {
                Issue.record("\(source) was decoded by a loader that must be blocked")
                continue
            }
            #expect(failure.code == .corruptMedia, "\(source)")
        }
        // The allowed ones still work.
        let jpeg = Thumbnailer.make(source: "\(testMediaDirectory)/photo.jpg", destinationBase: "\(scratch.path)/ok",
                                    shape: .clip(.whole), limits: limits)
        #expect((try? jpeg.get()) != nil)
    }

    @Test func progressiveJPEGsHaveTheirOwnLowerPixelCap() async throws {
        let media = Scratch()
        let scratch = Scratch()
        try await withPipeline(scratch, { $0.maxProgressivePixels = 4_000_000 }) { pipeline in
            let mediaPath = media.path
            try await offPool {
                try writeBlackJPEG(path: "\(mediaPath)/progressive.jpg", width: 2500, height: 2000, progressive: true)
                try writeBlackJPEG(path: "\(mediaPath)/baseline.jpg", width: 2500, height: 2000, progressive: false)
            }
            let routes = MediaRoutes(directory: media.path)
            let server = try LoopbackHTTPServer { request, connection in routes.handle(request, connection) }
            let progressive = await fetchOne("\(server.baseURL)/media/progressive.jpg", pipeline)
            let baseline = await fetchOne("\(server.baseURL)/media/baseline.jpg", pipeline)
            try await offPool { server.shutdown() }
            #expect(progressive.reason?.code == .pixelLimitExceeded)
            #expect(progressive.reason?.message.contains("progressive") == true)
            #expect(baseline.status == .ready)
            #expect(baseline.width == 2500 && baseline.height == 2000)
        }
    }

    @Test func animatedGIFsAreCappedByFramesAndTotalPixels() async throws {
        let scratch = Scratch()
        try await withMediaServer { server in
            let url = "\(server.baseURL)/media/animated.gif" // 4 frames of 160x120
            try await withPipeline(scratch, { $0.maxAnimationFrames = 3 }) { frames in
                let tooManyFrames = await fetchOne(url, frames)
                #expect(tooManyFrames.reason?.code == .pixelLimitExceeded)
                #expect(tooManyFrames.reason?.message.contains("4 frames") == true)
            }
            try await withPipeline(scratch, { $0.maxAnimationPixels = 160 * 120 * 4 - 1 }) { pixels in
                #expect(await fetchOne(url, pixels).reason?.code == .pixelLimitExceeded)
            }
            try await withPipeline(scratch, { $0.maxAnimationPixels = 160 * 120 * 4; $0.maxAnimationFrames = 4 }) { enough in
                #expect(await fetchOne(url, enough).status == .ready)
            }
        }
    }

    /// libvips counts a GIF's frames up to one past 4096: a GIF of 5,000 is said to have more
    /// than 4096, never "4097".
    @Test func aGIFPastLibvipsCountSaysMoreThanItCounted() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            let made = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "color=c=red:size=16x16:rate=100,format=rgb8",
                                                    "-t", "50", "-f", "gif", "\(media.path)/many.gif"])
            try #require(made.status == 0, "\(made.errors)")
        }
        try await withMediaServer(directory: media.path) { server in
            try await withPipeline(scratch) { pipeline in
                let d = await fetchOne("\(server.baseURL)/media/many.gif", pipeline)
                #expect(d.reason?.code == .pixelLimitExceeded && d.reason?.message.contains("more than 4096 frames") == true
                        && d.reason?.message.contains("4097") == false, "\(d.reason?.message ?? "ready")")
            }
        }
    }

    @Test func workingFilesAreCreatedExclusivelyWithPrivateModes() async throws {
        let scratch = Scratch()
        let out = Scratch()
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer { server in
                let batch = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/photo.jpg", identifier: "a")])
                let directory = try #require(batch.directory)
                #expect(fileMode(directory) == 0o700)
                #expect(fileMode("\(directory)/a.jpg") == 0o400)
                #expect(fileMode("\(directory)/a.thumb.jpg") == 0o400)
                // An identifier cannot escape --out.
                let escaped = await pipeline.process([AttachmentRequest(url: "\(server.baseURL)/media/tone.mp3", identifier: "../../../../tmp/evil")],
                                                     outputDirectory: out.path)
                #expect(escaped.attachments[0].file?.hasPrefix(out.path + "/") == true)
                #expect(out.tree() == ["_.._.._.._tmp_evil.mp3"])
            }
        }
    }
}
