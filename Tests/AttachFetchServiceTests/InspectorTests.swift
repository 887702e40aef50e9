import AttachFetch
@testable import AttachFetchService
import Foundation
import Testing
import ServiceTestHelpers
import TestHelpers

/// The inspector's routes over real HTTP, and the CLI's HTML report. (The page itself is
/// driven in a real browser by Tests/Browser, run by scripts/test.sh.)
@Suite struct InspectorTests {
    @Test func thePageAndItsAssetsCarryTheirHeadersAndNoInlineScript() async throws {
        let scratch = Scratch()
        let publishDirectory = scratch.path + "/published"
        try FileManager.default.createDirectory(atPath: publishDirectory, withIntermediateDirectories: false)
        let service = try await RunningServer.start(scratch) {
            $0.pipeline.publish = Publishing(directory: publishDirectory, baseURL: "https://media.example.com:8443/push")
        }
        let page = try await Exchange.send("GET", "\(service.base)/")
        #expect(page.status == 200 && page.headers["content-type"] == "text/html; charset=utf-8")
        #expect(page.headers["content-security-policy"]
            == "default-src 'self'; img-src 'self' data: https://media.example.com:8443; object-src 'none'; frame-ancestors 'none'")
        #expect(page.headers["x-content-type-options"] == "nosniff" && page.headers["referrer-policy"] == "no-referrer")
        #expect(page.text.contains(#"id="inspect-form""#))
        // No script with a body and no event-handler attribute: the CSP would block them.
        let inline = try NSRegularExpression(pattern: #"<script(?![^>]*\bsrc=)[^>]*>\s*[^<\s]|\son[a-z]+\s*="#, options: [.caseInsensitive])
        #expect(inline.firstMatch(in: page.text, range: NSRange(page.text.startIndex..., in: page.text)) == nil)
        #expect(page.text.contains(#"<script type="module" src="inspector.js"></script>"#))
        for (path, type) in [("/inspector.css", "text/css; charset=utf-8")]
            + InspectorPage.scripts.map({ ("/" + $0.name, "text/javascript; charset=utf-8") }) {
            let asset = try await Exchange.send("GET", service.base + path)
            #expect(asset.status == 200 && asset.headers["content-type"] == type && !asset.body.isEmpty, "\(path)")
            #expect(asset.headers["x-content-type-options"] == "nosniff", "\(path)")
        }
        #expect(try await Exchange.send("POST", "\(service.base)/").status == 405)
        await service.stop()
    }

    /// Every module a module imports is one the service serves, and comes before it in the
    /// report's script, which holds them with neither imports nor exports.
    @Test func theScriptModulesImportOnlyServedModules() throws {
        let names = InspectorPage.scripts.map(\.name)
        #expect(names.last == "inspector.js" && Set(names).count == names.count)
        let imported = try NSRegularExpression(pattern: #"^import [^;]*? from '\./([a-z-]+\.js)';"#, options: [.anchorsMatchLines])
        for (position, (name, text)) in InspectorPage.scripts.enumerated() {
            for match in imported.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let module = String(text[Range(match.range(at: 1), in: text)!])
                #expect(names.prefix(position).contains(module), "\(name) imports \(module)")
            }
        }
        let lines = InspectorPage.reportScript.split(separator: "\n")
        #expect(!lines.contains { $0.hasPrefix("import ") || $0.hasPrefix("export ") || $0.hasPrefix("} from ") })
    }

    @Test func batchFilesAreServedOnlyFromTheServicesOwnBatches() async throws {
        let scratch = Scratch()
        let service = try await RunningServer.start(scratch)
        try await withMediaServer { media in
            let answer = try await Exchange.post("\(service.base)/v1/attachments", json: #"{"urls": ["\#(media.baseURL)/media/photo.jpg"]}"#)
            let attachment = try #require((answer.json["attachments"] as? [[String: Any]])?.first)
            let thumbnail = try #require((attachment["thumbnail"] as? [String: Any])?["file"] as? String)
            let components = thumbnail.split(separator: "/").suffix(3).joined(separator: "/")
            let served = try await Exchange.send("GET", "\(service.base)/v1/files/\(components)")
            #expect(served.status == 200 && served.headers["content-type"] == "image/jpeg", "\(served.status) \(served.text.prefix(200))")
            #expect(served.body == FileManager.default.contents(atPath: thumbnail))
            #expect(served.headers["cache-control"] == "private, no-store")

            // A symbolic link inside a batch, a directory, and names that are not plain: none is served.
            let batch = (thumbnail as NSString).deletingLastPathComponent
            try FileManager.default.createSymbolicLink(atPath: batch + "/link.jpg", withDestinationPath: thumbnail)
            try FileManager.default.createSymbolicLink(atPath: batch + "/passwd", withDestinationPath: "/etc/passwd")
            let parts = components.split(separator: "/")
            for path in ["\(parts[0])/\(parts[1])/link.jpg", "\(parts[0])/\(parts[1])/passwd", "\(parts[0])/\(parts[1])",
                         "\(parts[0])/\(parts[1])/.hidden", "\(parts[0])/%2E%2E/\(parts[2])", "\(parts[0])/\(parts[1])/a%2Fb",
                         "\(parts[0])/\(parts[1])/\(parts[2])/extra", "\(parts[0])/batch-nonexistent/\(parts[2])"] {
                let refused = try await Exchange.send("GET", "\(service.base)/v1/files/\(path)")
                #expect(refused.status == 404 && refused.errorCode == "notFound", "\(path): \(refused.status)")
            }
        }
        await service.stop()
    }

    @Test func batchFilesNeedTheTokenWhenThereIsOne() async throws {
        let scratch = Scratch()
        let service = try await RunningServer.start(scratch) { $0.tokens = ["s3cret-token"] }
        #expect(try await Exchange.send("GET", "\(service.base)/v1/files/0/batch-abcdef/attachment-0.thumb.jpg").status == 401)
        #expect(try await Exchange.send("GET", "\(service.base)/").status == 200, "the page itself asks for the token")
        await service.stop()
    }

    @Test func aTitleThatLooksLikeMarkupStaysDataInTheReport() throws {
        let payload = Data(#"{"aps": {"alert": {"title": "</script><script>alert(1)</script><!--"}}}"#.utf8)
        let html = try InspectorPage.report(kind: .payload, result: Data(#"{"attachments": []}"#.utf8), payload: payload, descriptors: [])
        #expect(!html.contains("<script>alert(1)"), "no element can be closed or opened from the data")
        #expect(html.contains(#"\u003c/script>\u003cscript>alert(1)\u003c/script>\u003c!--"#))
    }
}
