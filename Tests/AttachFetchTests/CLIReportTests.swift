@testable import AttachFetchService
import Foundation
import Testing

/// The CLI's report for a person (`--format html`), built from the inspector's page.
@Suite struct CLIReportTests {
    /// `--format html`: one file with the stylesheet, the script and the result inside, and
    /// every thumbnail as a `data:` URI.
    @Test func theCLIReportIsOneSelfContainedFile() async throws {
        try await withMediaServer { media in
            let scratch = Scratch()
            let run = try await CLITests.run(["--allow-private-network", "--format", "html", "--out", scratch.path,
                                              "\(media.baseURL)/media/photo.jpg", "\(media.baseURL)/status/404"])
            #expect(run.status == 1, "one attachment is not ready: \(run.stderr)")
            let html = run.stdout
            #expect(html.hasPrefix("<!DOCTYPE html>") || html.hasPrefix("<!doctype html>"))
            #expect(!html.contains(InspectorPage.stylesheetLine) && !html.contains(InspectorPage.scriptLine)
                    && !html.contains(InspectorPage.dataMarker), "every reference inlined")
            #expect(html.contains("<style>") && html.contains("<script>"))
            // The element itself is the last such text: the inlined script may name it in a comment.
            let start = try #require(html.range(of: #"<script type="application/json" id="report-data">"#, options: .backwards))
            let end = try #require(html.range(of: "</script>", range: start.upperBound..<html.endIndex))
            let data = try #require(try JSONSerialization.jsonObject(with: Data(html[start.upperBound..<end.lowerBound].utf8)) as? [String: Any])
            #expect(data["kind"] as? String == "attachments")
            let attachments = try #require((data["result"] as? [String: Any])?["attachments"] as? [[String: Any]])
            #expect(attachments.map { $0["status"] as? String } == ["ready", "failed"])
            let thumbnail = try #require((attachments[0]["thumbnail"] as? [String: Any])?["file"] as? String)
            let image = try #require((data["images"] as? [String: String])?[thumbnail])
            #expect(image == "data:image/jpeg;base64," + (FileManager.default.contents(atPath: thumbnail)?.base64EncodedString() ?? "-"))
        }
    }
}
