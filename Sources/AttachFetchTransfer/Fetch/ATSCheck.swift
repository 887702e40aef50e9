/// App Transport Security's rules, applied to what one download saw. Pure: the facts come from
/// the transfer (`TLSSession`, the URL of each hop, the verifier's result), so every rule is
/// tested without a network.
enum ATSCheck {
    /// - Parameters:
    ///   - url: the URL as given.
    ///   - hops: the URL of each response, in order (redirects included).
    ///   - sessions: the TLS facts of each https hop that completed a handshake.
    ///   - tlsFailure: the reason, when the handshake or the certificate check failed.
    ///   - verifyResult: OpenSSL's certificate verification result (`X509_V_ERR_…`), when known.
    package static func verdict(url: String, hops: [String], sessions: [TLSFacts], tlsFailure: Reason?, verifyResult: Int?) -> ATSVerdict {
        typealias Problem = ATSVerdict.Problem
        var problems: [Problem] = []
        func add(_ code: String, _ message: String) {
            if !problems.contains(where: { $0.code == code }) { problems.append(Problem(code: code, message: message)) }
        }
        if URLCheck.isPlainHTTP(url) {
            add(ATSVerdict.insecureScheme, "the URL is plain http; ATS loads only https")
        } else if let hop = hops.dropFirst().first(where: URLCheck.isPlainHTTP) {
            add(ATSVerdict.insecureRedirect, "a redirect leads to plain http (\(hop)); ATS loads only https")
        }
        for session in sessions {
            if session.version != "TLSv1.2" && session.version != "TLSv1.3" {
                add(ATSVerdict.tlsVersion, "the server negotiated \(session.version); ATS requires TLS 1.2 or later")
            }
            if !session.forwardSecret {
                add(ATSVerdict.cipherNotForwardSecret, "the cipher \(session.cipher) has no ECDHE key exchange; ATS requires forward secrecy")
            }
            if let signature = session.weakSignature {
                add(ATSVerdict.certificateSignature, "a certificate is signed with \(signature); ATS requires SHA-256 or stronger")
            }
            if let key = session.smallKey {
                add(ATSVerdict.certificateKeySize, "a certificate has \(key); ATS requires RSA 2048 or ECC 256 bits or more")
            }
        }
        // A handshake that failed leaves no session: what the failure says is what is known.
        if let tlsFailure {
            let message = tlsFailure.message.lowercased()
            if message.contains("protocol version") || message.contains("unsupported protocol") || message.contains("wrong version number") {
                add(ATSVerdict.tlsVersion, "the server offers only TLS below 1.2: \(tlsFailure.message)")
            }
        }
        switch verifyResult {
        case 68?: // X509_V_ERR_CA_MD_TOO_WEAK
            add(ATSVerdict.certificateSignature, "a certificate's signature is too weak (SHA-1 or MD5); ATS requires SHA-256 or stronger")
        case 66?, 67?: // X509_V_ERR_EE_KEY_TOO_SMALL, X509_V_ERR_CA_KEY_TOO_SMALL
            add(ATSVerdict.certificateKeySize, "a certificate's key is too small; ATS requires RSA 2048 or ECC 256 bits or more")
        default:
            break
        }
        return ATSVerdict(problems: problems)
    }
}
