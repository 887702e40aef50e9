import Foundation
import Testing
@testable import AttachFetch

/// HTTPS against a real TLS server: nginx from Debian on 127.0.0.1, with a test CA and
/// certificates made at test time by `openssl`. nginx rather than a swift-nio-ssl server: it is
/// what CDNs' origins run, it speaks HTTP/2 by ALPN, and its protocols, ciphers and access log
/// (`$connection`) are set in a few lines.
// Serialized: each test starts nginx on a port found free just before, which a parallel test could take.
@Suite(.serialized) struct TLSTests {
    static let certificates = Result { try TestCertificates() }

    func trustingTestCA(_ configuration: inout AttachFetchConfiguration) {
        configuration.trustedCertificates = [(try? String(contentsOfFile: (try? Self.certificates.get())?.pem("ca") ?? "", encoding: .utf8)) ?? ""]
    }

    @Test func aCertificateFromAnAddedCAIsVerifiedAndWithoutItRefused() async throws {
        let certificates = try Self.certificates.get()
        let server = try NginxTLSServer(serving: testMediaDirectory, certificates: certificates)
        defer { server.shutdown() }
        let scratch = Scratch()
        try await withPipeline(scratch, trustingTestCA) { trusting in
            let d = await fetchOne("\(server.baseURL)/photo.jpg", trusting)
            #expect(d.status == .ready, "\(d.reason?.message ?? "")")
            #expect(try d.sha256 == sha256sum("\(testMediaDirectory)/photo.jpg"))

            try await withPipeline(scratch) { plain in
                let refused = await fetchOne("\(server.baseURL)/photo.jpg", plain)
                #expect(refused.reason?.code == .tlsFailed && refused.status == .failed)
                #expect(refused.reason?.message.contains("unable to get local issuer certificate") == true, "\(refused.reason?.message ?? "")")
            }
        }
        #expect(scratch.tree().allSatisfy { !$0.contains(".part-") })
    }

    /// The added CA joins the system's bundle; it does not replace it.
    @Test func addedCertificatesAddToTheSystemStore() throws {
        let ca = try String(contentsOfFile: try Self.certificates.get().pem("ca"), encoding: .utf8)
        let store = try #require(try TrustStore.adding([ca]))
        let system = try #require(FileManager.default.contents(atPath: "/etc/ssl/certs/ca-certificates.crt"))
        let systemCount = PEMCertificates.count(in: String(decoding: system, as: UTF8.self))
        #expect(systemCount > 50)
        #expect(PEMCertificates.count(in: String(decoding: store.pem, as: UTF8.self)) == systemCount + 1)
        #expect(try TrustStore.adding([]) == nil)
    }

    /// Each TLS failure is `tlsFailed` with the verifier's own words, and leaves no file.
    @Test(arguments: [
        ("untrusted", "TLSv1.2 TLSv1.3", "unable to get local issuer certificate"),
        ("wrong-host", "TLSv1.2 TLSv1.3", "no alternative certificate subject name matches"),
        ("expired", "TLSv1.2 TLSv1.3", "certificate has expired"),
        ("server", "TLSv1 TLSv1.1", "protocol"),
    ])
    func tlsFailuresAreTlsFailedWithTheVerifiersMessage(certificate: String, protocols: String, expected: String) async throws {
        let certificates = try Self.certificates.get()
        // TLS 1.0 and 1.1 need OpenSSL's security level 0 on the server side to be offered at all.
        let server = try NginxTLSServer(serving: testMediaDirectory, certificates: certificates, certificate: certificate,
                                        protocols: protocols, ciphers: protocols.hasPrefix("TLSv1 ") ? "DEFAULT:@SECLEVEL=0" : "HIGH:!aNULL")
        defer { server.shutdown() }
        let scratch = Scratch()
        let d = try await withPipeline(scratch, trustingTestCA) { pipeline in await fetchOne("\(server.baseURL)/photo.jpg", pipeline) }
        #expect(d.reason?.code == .tlsFailed, "\(certificate) \(protocols): \(d.reason?.message ?? "ready")")
        #expect(d.status == .failed)
        #expect(d.reason?.message.localizedCaseInsensitiveContains(expected) == true, "\(d.reason?.message ?? "")")
        #expect(d.file == nil && d.bytes == nil)
        #expect(scratch.tree() == [])
    }

    /// Transfers to one HTTP/2 host share its connection: 300 requests, 1–2 connections.
    @Test func http2MultiplexesTransfersToOneHost() async throws {
        let certificates = try Self.certificates.get()
        let server = try NginxTLSServer(serving: testMediaDirectory, certificates: certificates)
        defer { server.shutdown() }
        let scratch = Scratch()
        let requests = (0..<300).map { AttachmentRequest(url: "\(server.baseURL)/tone.mp3?n=\($0)") }
        let batch = try await withPipeline(scratch, trustingTestCA) { pipeline in await pipeline.process(requests, deadline: .seconds(60)) }
        #expect(batch.attachments.allSatisfy { $0.status == .ready })
        let log = server.accessLog()
        #expect(log.count == 300)
        #expect(log.allSatisfy { $0.protocolName == "HTTP/2.0" })
        let connections = Set(log.map(\.connection))
        #expect((1...2).contains(connections.count), "\(connections.count) connections")
    }

    /// nginx relays a body its upstream (the loopback server) resets halfway: on HTTP/2 that
    /// ends the stream with RST_STREAM mid-body, which must fail the attachment, leaving no file.
    @Test func anHTTP2StreamResetMidBodyIsTransferFailed() async throws {
        let certificates = try Self.certificates.get()
        let scratch = Scratch()
        try await withMediaServer { upstream in
            let server = try NginxTLSServer(
                serving: testMediaDirectory, certificates: certificates,
                locations: "location = /reset { proxy_pass \(upstream.baseURL)/fault/reset?name=clip.avi; proxy_buffering off; }")
            defer { server.shutdown() }
            let d = try await withPipeline(scratch, trustingTestCA) { pipeline in await fetchOne("\(server.baseURL)/reset", pipeline) }
            #expect(d.reason?.code == .transferFailed, "\(d.reason?.message ?? "ready")")
            #expect(server.accessLog().first?.protocolName == "HTTP/2.0")
            #expect(d.file == nil && scratch.tree() == [])
        }
    }

    @Test func cliTrustsACAFileAndRefusesAMissingOrEmptyOne() async throws {
        let certificates = try Self.certificates.get()
        let server = try NginxTLSServer(serving: testMediaDirectory, certificates: certificates)
        defer { server.shutdown() }
        let out = Scratch()
        let url = "\(server.baseURL)/photo.jpg"
        let trusted = try await CLITests.run(["--allow-private-network", "--format", "json", "--out", out.path,
                                              "--ca-file", certificates.pem("ca"), url])
        #expect(trusted.status == 0, "\(trusted.stdout)")
        let refused = try await CLITests.run(["--allow-private-network", "--format", "json", "--out", out.path, url])
        #expect(refused.status == 1 && refused.stdout.contains("\"tlsFailed\""))

        let missing = "\(out.path)/no-such-ca.pem"
        let notCertificate = "\(out.path)/not-a-ca.pem"
        try "just text\n".write(toFile: notCertificate, atomically: true, encoding: .utf8)
        for (file, message) in [(missing, "cannot be read"), (notCertificate, "holds no PEM certificate")] {
            let run = try await CLITests.run(["--ca-file", file, url])
            #expect(run.status == 2)
            #expect(run.stderr.contains("--ca-file \(file) \(message)"), "\(run.stderr)")
        }
    }
}

/// The App Transport Security verdict from real connections: nginx configured to show each
/// problem, and the loopback HTTP server for plain http.
// Serialized: each test starts nginx on a port found free just before, which a parallel test could take.
@Suite(.serialized) struct ATSVerdictTests {
    func verdict(certificate: String = "server", protocols: String = "TLSv1.2 TLSv1.3", ciphers: String = "HIGH:!aNULL",
                 path: String = "photo.jpg", locations: String = "") async throws -> AttachmentDescriptor {
        let certificates = try TLSTests.certificates.get()
        let server = try NginxTLSServer(serving: testMediaDirectory, certificates: certificates, certificate: certificate,
                                        protocols: protocols, ciphers: ciphers, locations: locations)
        defer { server.shutdown() }
        let scratch = Scratch()
        let ca = try String(contentsOfFile: certificates.pem("ca"), encoding: .utf8)
        let d = try await withPipeline(scratch, { $0.trustedCertificates = [ca] }) { pipeline in
            await fetchOne("\(server.baseURL)/\(path)", pipeline)
        }
        #expect(scratch.tree().allSatisfy { !$0.hasPrefix(".") && !$0.contains("/.") })
        return d
    }

    func codes(_ d: AttachmentDescriptor) -> [String] { d.ats?.problems.map(\.code) ?? ["no verdict"] }

    @Test func modernTLSIsCompliant() async throws {
        let d = try await verdict()
        #expect(d.status == .ready)
        #expect(d.ats == ATSVerdict(problems: []))
    }

    @Test func aCipherWithoutECDHEIsNotForwardSecret() async throws {
        let d = try await verdict(protocols: "TLSv1.2", ciphers: "AES128-SHA")
        #expect(d.status == .ready, "\(d.reason?.message ?? "")")
        #expect(codes(d) == [ATSVerdict.cipherNotForwardSecret])
        #expect(d.ats?.problems.first?.message.contains("AES128-SHA") == true)
    }

    /// OpenSSL refuses these too (Debian's security level 2), so the download fails as
    /// `tlsFailed`; the verdict still names what ATS would object to.
    @Test(arguments: [
        ("sha1", "TLSv1.2 TLSv1.3", ATSVerdict.certificateSignature),
        ("weak-key", "TLSv1.2 TLSv1.3", ATSVerdict.certificateKeySize),
        ("server", "TLSv1 TLSv1.1", ATSVerdict.tlsVersion),
    ])
    func refusedConnectionsNameTheirATSProblem(certificate: String, protocols: String, problem: String) async throws {
        let d = try await verdict(certificate: certificate, protocols: protocols, ciphers: "DEFAULT:@SECLEVEL=0")
        #expect(d.reason?.code == .tlsFailed, "\(d.reason?.message ?? "ready")")
        #expect(codes(d) == [problem], "\(d.reason?.message ?? "")")
    }

    @Test func plainHTTPAndAnHTTPSToHTTPRedirectAreInsecure() async throws {
        let scratch = Scratch()
        try await withMediaServer { http in
            let plain = try await withPipeline(scratch) { pipeline in await fetchOne("\(http.baseURL)/media/photo.jpg", pipeline) }
            #expect(plain.status == .ready && codes(plain) == [ATSVerdict.insecureScheme])

            let redirected = try await verdict(path: "to-http",
                                               locations: "location = /to-http { return 302 \(http.baseURL)/media/photo.jpg; }")
            #expect(redirected.status == .ready, "\(redirected.reason?.message ?? "")")
            #expect(redirected.finalUrl?.hasPrefix("http://") == true)
            #expect(codes(redirected) == [ATSVerdict.insecureRedirect])
        }
    }
}

/// An explicit egress proxy (HTTP CONNECT): the proxy's address must be allowed, literal
/// private hosts are refused before the proxy is asked, the environment's proxies are ignored.
// Serialized: each test starts nginx on a port found free just before, which a parallel test could take.
@Suite(.serialized) struct ProxyTests {
    @Test func transfersTunnelThroughTheConfiguredProxyOnly() async throws {
        let proxy = try ConnectProxy()
        defer { proxy.shutdown() }
        let scratch = Scratch()
        try await withMediaServer { server in
            // Only the proxy's own address is allowed: loopback is private, so without the
            // proxy this URL would be refused.
            try await withPipeline(scratch, loopback: false, {
                $0.proxy = proxy.url
                $0.allowedRanges = [try! CIDRRange("127.0.0.1/32")]
            }) { pipeline in
                let d = await fetchOne("\(server.baseURL)/media/photo.jpg", pipeline)
                #expect(d.status == .ready, "\(d.reason?.message ?? "")")
                let port = server.baseURL.split(separator: ":").last.map(String.init) ?? ""
                #expect(proxy.targets == ["127.0.0.1:\(port)"])

                // A literal address the policy refuses never reaches the proxy (127.0.0.2: loopback,
                // so even a broken check could only reach this machine).
                let refused = await fetchOne("http://127.0.0.2:\(port)/media/photo.jpg", pipeline)
                #expect(refused.reason?.code == .forbiddenAddress, "\(refused.reason?.message ?? "ready")")
                #expect(refused.reason?.message.contains("before asking the proxy") == true)
                #expect(proxy.targets.count == 1)
            }
        }
    }

    @Test func theProxysOwnAddressMustBeAllowed() async throws {
        let proxy = try ConnectProxy()
        defer { proxy.shutdown() }
        let scratch = Scratch()
        try await withMediaServer { server in
            // The host is a name, so only the open-socket check stands: it sees the proxy's
            // loopback address and refuses it.
            let port = server.baseURL.split(separator: ":").last.map(String.init) ?? ""
            let d = try await withPipeline(scratch, loopback: false, { $0.proxy = proxy.url }) { pipeline in
                await fetchOne("http://localhost:\(port)/media/photo.jpg", pipeline)
            }
            #expect(d.reason?.code == .forbiddenAddress, "\(d.reason?.message ?? "ready")")
            #expect(proxy.targets.isEmpty)
        }
    }

    @Test func aProxyThatIsNotHTTPIsAConfigurationError() async throws {
        var configuration = AttachFetchConfiguration()
        configuration.proxy = "socks5://127.0.0.1:1080"
        do {
            try configuration.validate()
            Issue.record("a socks5 proxy was accepted")
        } catch {
            #expect(AttachFetchError.invalidConfiguration("") ~= error)
            #expect(error.message.contains("socks5://127.0.0.1:1080"))
        }
        let run = try await CLITests.run(["--proxy", "ftp://127.0.0.1:21", "http://127.0.0.1/a.jpg"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--proxy: the proxy must be an http:// or https:// URL"), "\(run.stderr)")
    }
}
