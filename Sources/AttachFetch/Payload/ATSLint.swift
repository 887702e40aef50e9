import Foundation

extension PushPayload {
    /// The payload's lint (`lint(media:)`) plus what the downloads learned: an `atsNotCompliant`
    /// warning for each medium whose descriptor says App Transport Security would refuse it,
    /// naming what the app's Info.plist would need to load it anyway.
    public func lint(media: [PayloadMedia], descriptors: [AttachmentDescriptor]) -> [PayloadLintFinding] {
        var findings = lint(media: media)
        for (item, descriptor) in zip(media, descriptors) {
            guard let ats = descriptor.ats, !ats.compliant else { continue }
            let host = URL(string: item.url)?.host ?? "its host"
            let codes = Set(ats.problems.map(\.code))
            var keys: [String] = []
            if codes.contains(ATSVerdict.insecureScheme) || codes.contains(ATSVerdict.insecureRedirect) {
                keys.append("NSExceptionAllowsInsecureHTTPLoads = YES")
            }
            if codes.contains(ATSVerdict.tlsVersion) { keys.append("NSExceptionMinimumTLSVersion = TLSv1.0") }
            if codes.contains(ATSVerdict.cipherNotForwardSecret) { keys.append("NSExceptionRequiresForwardSecrecy = NO") }
            var remedy = keys.isEmpty ? "" : "NSAppTransportSecurity → NSExceptionDomains → \(host) → { \(keys.joined(separator: "; ")) }"
            if codes.contains(ATSVerdict.certificateSignature) || codes.contains(ATSVerdict.certificateKeySize) {
                remedy += (remedy.isEmpty ? "" : ", and ") + "for the certificate, only NSAllowsArbitraryLoads = YES (ATS off for every host) or a new certificate"
            }
            findings.append(PayloadLintFinding(
                code: "atsNotCompliant", severity: .warning,
                message: "iOS App Transport Security would refuse this media (\(ats.problems.map(\.message).joined(separator: "; "))); to load it anyway the app needs \(remedy)",
                path: item.path))
        }
        return findings
    }
}
