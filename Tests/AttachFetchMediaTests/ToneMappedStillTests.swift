import Foundation
import Testing
import CVips
@testable import AttachFetchMedia

/// A large HDR still is tone-mapped in strips of rows, each through its own filter graph, so
/// that the filters' float planes stay small. Each pixel's mapping is its own: the strips must
/// make exactly what one pass makes.
@Suite struct ToneMappedStillTests {
    static func pixels(_ image: VipsImageRef) throws -> [UInt8] {
        var size = 0
        let memory = try #require(vips_image_write_to_memory(image.pointer, &size))
        defer { g_free(memory) }
        return [UInt8](UnsafeRawBufferPointer(start: memory, count: size))
    }

    @Test func stripsMakeWhatOnePassMakes() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tone-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // 16-bit samples of saturated gradients, read as PQ in BT.2020 (the statement is given).
        let source = "\(directory)/pq.png"
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
                            "gradients=s=600x400:c0=red:c1=lime:c2=blue:c3=white:c4=yellow:n=5:speed=0.00001",
                            "-frames:v", "1", "-pix_fmt", "rgb48be", source]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        try #require(ffmpeg.terminationStatus == 0)
        let statement = (primaries: 9, transfer: 16)
        let whole = try ToneMappedStill.image(source, statement: statement, width: 600, height: 400)
        // 64-row strips, the last of 16.
        let strips = try ToneMappedStill.image(source, statement: statement, width: 600, height: 400,
                                               maxPixelsPerPass: 600 * 64)
        #expect(whole.width == 600 && whole.height == 400 && strips.width == 600 && strips.height == 400)
        let (a, b) = (try Self.pixels(whole), try Self.pixels(strips))
        let differing = zip(a, b).enumerated().filter { $0.element.0 != $0.element.1 }
        let rows = Set(differing.map { $0.offset / (600 * 3) }).sorted()
        let most = differing.map { abs(Int($0.element.0) - Int($0.element.1)) }.max() ?? 0
        #expect(a.count == 600 * 400 * 3 && differing.isEmpty, "\(differing.count) samples differ, at most by \(most), in rows \(rows)")
        // Larger than a pass and scaled: mapped in strips at full size, then scaled by libvips.
        let scaled = try ToneMappedStill.image(source, statement: statement, width: 300, height: 200,
                                               maxPixelsPerPass: 300 * 100)
        #expect(scaled.width == 300 && scaled.height == 200)
    }
}
