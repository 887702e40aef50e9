import CTestSupport
import Foundation
import Testing
@testable import AttachFetch

/// The corpus suite's independent rendering (`MediaChecker.difference`) tells a right picture
/// from a wrong one: turned by EXIF, upside down, cropped elsewhere.
@Suite struct RenderCheckTests {
    @Test func theRenderingCheckTellsOrientationAndPlacement() async throws {
        let work = Scratch()
        let source = "\(work.path)/source.png"
        let made = try await tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=s=320x240", "-frames:v", "1", source])
        try #require(made.status == 0, "\(made.errors)")
        _ = try ColourTests.vips(["rot", source, "\(work.path)/upside-down.jpg", "d180"])
        // Stored upside down and tagged orientation 3: shown upright.
        #expect(af_test_write_oriented_jpeg("\(work.path)/upside-down.jpg", "\(work.path)/tagged.jpg", 3) == 0)
        // Stored upright and tagged orientation 3: shown upside down.
        #expect(af_test_write_oriented_jpeg(source, "\(work.path)/mistagged.jpg", 3) == 0)
        _ = try ColourTests.vips(["extract_area", source, "\(work.path)/top.png", "0", "0", "320", "160"])
        _ = try ColourTests.vips(["extract_area", source, "\(work.path)/middle.png", "0", "40", "320", "160"])
        _ = try ColourTests.vips(["rot", "\(work.path)/middle.png", "\(work.path)/middle-turned.png", "d180"])
        let checker = try MediaChecker()
        defer { checker.close() }
        func off(_ output: String) throws -> Double {
            let answer = try checker.difference(source: source, output: "\(work.path)/\(output)")
            return try #require(answer.difference, "\(output): \(answer.errors)")
        }
        let (tagged, top, middle) = (try off("tagged.jpg"), try off("top.png"), try off("middle.png"))
        let (upsideDown, mistagged, turned) = (try off("upside-down.jpg"), try off("mistagged.jpg"), try off("middle-turned.png"))
        #expect(tagged < 3 && top < 1 && middle < 1, "right: tagged \(tagged), top \(top), middle \(middle)")
        #expect(upsideDown > 20 && mistagged > 20 && turned > 20, "wrong: \(upsideDown), \(mistagged), \(turned)")
    }
}
