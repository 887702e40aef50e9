import Testing
@testable import AttachFetchCore

/// The one redaction of URLs for logs and the service's spans: user info and secret query
/// values never reach them; the rest of the URL does.
@Suite struct URLRedactionTests {
    @Test(arguments: [
        ("https://cdn.example.com/a.jpg?w=100", "https://cdn.example.com/a.jpg?w=100"),
        ("https://u:p@cdn.example.com/a.jpg", "https://cdn.example.com/a.jpg"),
        ("https://b.s3.amazonaws.com/k?X-Amz-Signature=abc&X-Amz-Credential=AKIA%2F1&x=1",
         "https://b.s3.amazonaws.com/k?X-Amz-Signature=REDACTED&X-Amz-Credential=REDACTED&x=1"),
        ("https://api.example.com/v1?access_token=t0k&api_key=k3y&Token=T&sig=s&auth=a&key=k",
         "https://api.example.com/v1?access_token=REDACTED&api_key=REDACTED&Token=REDACTED&sig=REDACTED&auth=REDACTED&key=REDACTED"),
        ("https://h.example/p?TOKEN=x&w=1#frag", "https://h.example/p?TOKEN=REDACTED&w=1#frag"),
    ])
    func aURLIsWrittenDownWithoutItsSecrets(url: String, expected: String) {
        #expect(URLRedaction.redacted(url) == expected)
    }

    /// The service's tracing middleware takes a list of names: every secret name is in it,
    /// in the spellings callers use.
    @Test func theServicesListNamesEverySecret() {
        let names = Set(URLRedaction.spelledParameters)
        for name in ["access_token", "api_key", "token", "Token", "TOKEN", "signature", "X-Amz-Signature", "X-Amz-Credential", "x-amz-security-token"] {
            #expect(names.contains(name), "\(name)")
        }
    }

    /// A parameter the operator names is a secret from then on, in every spelling, for the
    /// redaction and for the service's list; one nobody named stays as it is.
    @Test func aParameterTheOperatorAddsIsRedactedToo() {
        let url = "https://cdn.example.com/a.jpg?Campaign-Secret=s3cr3t&w=100"
        #expect(URLRedaction.redacted(url).contains("s3cr3t"), "not a secret before it is named")
        URLRedaction.addSecretParameters(["campaign-secret"])
        #expect(URLRedaction.redacted(url) == "https://cdn.example.com/a.jpg?Campaign-Secret=REDACTED&w=100")
        #expect(Set(URLRedaction.spelledParameters).isSuperset(of: ["campaign-secret", "Campaign-Secret", "CAMPAIGN-SECRET"]))
    }
}
