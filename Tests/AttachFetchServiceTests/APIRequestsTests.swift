@testable import AttachFetchService
import Foundation
import Testing
import ServiceTestHelpers
import TestHelpers

/// `POST /v1/attachments` bodies, decoded without sockets: every refusal names its field, in
/// the words a client sees.
@Suite struct APIRequestsTests {
    func message(_ body: String) -> String? {
        do {
            _ = try APIRequests.attachments(Data(body.utf8), maxRequests: 3)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func everyRefusalNamesItsField() {
        let cases: [(String, String)] = [
            ("not json", "the body is not a JSON object"),
            ("[1]", "the body is not a JSON object"),
            (#"{"colour": 1, "urls": []}"#, "unknown field 'colour' (known: requests, urls, deadlineMs, files, encrypt)"),
            (#"{}"#, "give requests or urls"),
            (#"{"urls": ["a"], "requests": []}"#, "give requests or urls, not both"),
            (#"{"urls": "a"}"#, "urls must be an array of strings"),
            (#"{"urls": ["a", 2]}"#, "urls[1] must be a string"),
            (#"{"requests": 3}"#, "requests must be an array"),
            (#"{"requests": [3]}"#, "requests[0] must be an object"),
            (#"{"requests": [{"url": "a", "size": 1}]}"#, "requests[0]: unknown field 'size'"),
            (#"{"requests": [{"url": "a"}, {"identifier": "x"}]}"#, "requests[1].url must be a string"),
            (#"{"requests": [{"url": "a", "identifier": ""}]}"#, "requests[0].identifier must be a non-empty string"),
            (#"{"requests": [{"url": "a", "clip": {"x": 0}}]}"#, #"requests[0].clip must be {"x", "y", "width", "height"} numbers, and nothing else"#),
            (#"{"requests": [{"url": "a", "clip": {"x": 0, "y": 0, "width": 1, "height": 1, "z": 1}}]}"#,
             #"requests[0].clip must be {"x", "y", "width", "height"} numbers, and nothing else"#),
            (#"{"requests": [{"url": "a", "thumbnailTime": -1}]}"#, "requests[0].thumbnailTime must be a number of seconds, 0 or more"),
            (#"{"requests": [{"url": "a", "thumbnailTime": "1"}]}"#, "requests[0].thumbnailTime must be a number of seconds, 0 or more"),
            (#"{"requests": [{"url": "a", "role": "banner"}]}"#, #"requests[0].role must be "attachment" or "avatar""#),
            (#"{"urls": ["a"], "deadlineMs": 0}"#, "deadlineMs must be a number of milliseconds greater than 0"),
            (#"{"urls": ["a"], "deadlineMs": null}"#, "deadlineMs must be a number of milliseconds greater than 0"),
            (#"{"urls": []}"#, "urls must not be empty"),
            (#"{"urls": ["a", "b", "c", "d"]}"#, "urls: 4 in one call; at most 3"),
        ]
        for (body, expected) in cases {
            #expect(message(body) == expected, "\(body)")
        }
        #expect(message(#"{"requests": [{"url": "a", "clip": {"x": 0, "y": 0, "width": 2, "height": 1}}]}"#)?
            .hasPrefix("requests[0].clip: ") == true)
    }

    @Test func aGoodBodyKeepsEveryField() throws {
        let body = #"{"requests": [{"url": "https://a/b.jpg", "identifier": "hero", "role": "avatar", "thumbnailTime": 2.5, "clip": {"x": 0, "y": 0.25, "width": 0.5, "height": 0.5}}], "deadlineMs": 1500}"#
        let (requests, deadline, keepsFiles, _) = try APIRequests.attachments(Data(body.utf8), maxRequests: 3)
        #expect(deadline == 1500 && requests.count == 1 && keepsFiles)
        let request = try #require(requests.first)
        #expect(request.url == "https://a/b.jpg" && request.identifier == "hero" && request.role == .avatar)
        #expect(request.options?.thumbnailTime == 2.5)
        #expect(request.clip?.y == 0.25 && request.clip?.width == 0.5)
        let (urls, none, _, _) = try APIRequests.attachments(Data(#"{"urls": ["x", "y"]}"#.utf8), maxRequests: 3)
        #expect(urls.map(\.url) == ["x", "y"] && none == nil)
        #expect(try APIRequests.attachments(Data(#"{"urls": ["x"], "files": "none"}"#.utf8), maxRequests: 3).keepsFiles == false)
        #expect(try APIRequests.attachments(Data(#"{"urls": ["x"], "files": "kept"}"#.utf8), maxRequests: 3).keepsFiles == true)
    }

    /// Query flags are `true` or `false`; the deadline header is digits with an optional
    /// fraction, over 0 (what the OpenAPI document's pattern says; schemathesis found both
    /// taken loosely).
    @Test func flagsAndTheDeadlineHeaderAreStrict() throws {
        #expect(try APIRequests.flag(nil, field: "rewrite") == false)
        #expect(try APIRequests.flag("true", field: "rewrite") == true)
        #expect(try APIRequests.flag("false", field: "rewrite") == false)
        for bad in ["AAA", "TRUE", "1", ""] {
            #expect(throws: APIError.self, "\(bad)") { try APIRequests.flag(bad, field: "stripFailed") }
        }
        #expect(try APIRequests.deadlineHeader("1500") == 1500)
        #expect(try APIRequests.deadlineHeader("2.5") == 2.5)
        for bad in ["0", "0.0", "", "1e3", "-5", " 5", "5.", ".5", "inf", "nan", "0x10"] {
            #expect(throws: APIError.self, "\(bad)") { try APIRequests.deadlineHeader(bad) }
        }
    }
}
