import Foundation
import Testing
import AttachFetchCore
@testable import AttachFetchTransfer

/// App Transport Security's rules on given facts (no network). The payload lint they feed is
/// the pipeline's `ATSLintTests`.
@Suite struct ATSCheckTests {
    static let modern = TLSFacts(version: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256", forwardSecret: true)

    func codes(_ verdict: ATSVerdict) -> [String] { verdict.problems.map(\.code) }

    @Test func eachRuleNamesItsProblem() {
        let https = "https://cdn.example/a.jpg"
        #expect(ATSCheck.verdict(url: https, hops: [https], sessions: [Self.modern], tlsFailure: nil, verifyResult: nil).compliant)
        #expect(codes(ATSCheck.verdict(url: "http://cdn.example/a.jpg", hops: ["http://cdn.example/a.jpg"], sessions: [],
                                       tlsFailure: nil, verifyResult: nil)) == [ATSVerdict.insecureScheme])
        #expect(codes(ATSCheck.verdict(url: https, hops: [https, "HTTP://cdn.example/b.jpg"], sessions: [Self.modern],
                                       tlsFailure: nil, verifyResult: nil)) == [ATSVerdict.insecureRedirect])
        var old = Self.modern
        old.version = "TLSv1.1"
        #expect(codes(ATSCheck.verdict(url: https, hops: [https], sessions: [old], tlsFailure: nil, verifyResult: nil)) == [ATSVerdict.tlsVersion])
        var rsa = TLSFacts(version: "TLSv1.2", cipher: "AES128-SHA", forwardSecret: false)
        #expect(codes(ATSCheck.verdict(url: https, hops: [https], sessions: [rsa], tlsFailure: nil, verifyResult: nil))
                == [ATSVerdict.cipherNotForwardSecret])
        rsa.forwardSecret = true
        rsa.weakSignature = "RSA-SHA1"
        rsa.smallKey = "an RSA key of 1024 bits"
        #expect(codes(ATSCheck.verdict(url: https, hops: [https], sessions: [rsa], tlsFailure: nil, verifyResult: nil))
                == [ATSVerdict.certificateSignature, ATSVerdict.certificateKeySize])
    }

    /// A refused handshake leaves no session: the verifier's result and message say what failed.
    @Test func aFailedHandshakeStillNamesTheATSProblem() {
        let https = "https://cdn.example/a.jpg"
        let failure = Reason(code: .tlsFailed, message: "error:0A000102:SSL routines::unsupported protocol")
        #expect(codes(ATSCheck.verdict(url: https, hops: [], sessions: [], tlsFailure: failure, verifyResult: nil)) == [ATSVerdict.tlsVersion])
        let verify = Reason(code: .tlsFailed, message: "SSL certificate problem: ca md too weak")
        #expect(codes(ATSCheck.verdict(url: https, hops: [], sessions: [], tlsFailure: verify, verifyResult: 68)) == [ATSVerdict.certificateSignature])
        #expect(codes(ATSCheck.verdict(url: https, hops: [], sessions: [], tlsFailure: verify, verifyResult: 66)) == [ATSVerdict.certificateKeySize])
        // An untrusted CA is not an ATS matter (the app's trust store decides).
        #expect(ATSCheck.verdict(url: https, hops: [], sessions: [], tlsFailure: verify, verifyResult: 20).compliant)
    }
}
