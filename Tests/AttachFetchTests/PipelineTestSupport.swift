import CAttachFetchShims
import CVipsShims
import CTestSupport
import CVips
import AttachFetchMedia
import Foundation
import LoopbackHTTPServer
@_exported import ServiceTestHelpers
@_exported import TestHelpers
@_exported import ObjectStoreTestHelpers
import Testing
@testable import AttachFetch

/// Runs `body` with a pipeline whose temp dir is in `scratch` and that may reach loopback (the
/// tests' server), or with `loopback: false` the default address policy, which refuses it; the
/// pipeline is shut down when `body` returns or throws. Every test that makes a pipeline makes
/// it here (the library's `withAttachmentPipeline` underneath), so that none is left to deinit.
func withPipeline<T: Sendable>(_ scratch: Scratch, loopback: Bool = true,
                               _ adjust: (inout AttachFetchConfiguration) -> Void = { _ in },
                               _ body: (AttachmentPipeline) async throws -> T) async throws -> T {
    var configuration = AttachFetchConfiguration()
    configuration.allowPrivateNetwork = loopback
    configuration.temporaryDirectory = scratch.path
    // Most tests send one loopback host failure after failure on purpose (stalls, resets, 5xx):
    // the breaker would end them early. Its own tests set it back (`OriginBreakerTests`).
    configuration.breaker.failures = 1_000
    // Image workers start at their thread's first image: most tests decode one image or none,
    // and the suite makes hundreds of pipelines (about 600 worker starts saved, 50 ms each).
    // The tests of the default set it back (`IsolationTests`).
    configuration.imageWorkersStartWithPipeline = false
    adjust(&configuration)
    return try await withAttachmentPipeline(configuration: configuration, body)
}

/// Starts what a pipeline starts once per process (libvips with its loaders restricted), for
/// tests that call the decoders, the thumbnailers or the image writers below directly: by
/// making a pipeline and shutting it down.
func startLibraries() async throws {
    try await withPipeline(Scratch()) { _ in }
}

/// One URL through a pipeline; returns its descriptor.
func fetchOne(_ url: String, _ pipeline: AttachmentPipeline, clip: ClippingRectangle? = nil,
              thumbnailTime: Double? = nil, deadline: Duration? = nil) async -> AttachmentDescriptor {
    let options = thumbnailTime.map { AttachmentOptions(thumbnailTime: $0) }
    return await pipeline.process([AttachmentRequest(url: url, clip: clip, options: options)], deadline: deadline).attachments[0]
}

/// How late a timing test lets anything be. Generous (300 ms) because CI machines are noisy;
/// the real figures come from the benchmarks. A test that uses it says so in its display name
/// ("…, within 300 ms of slack"): it holds real time, not the injectable clock.
let timingSlack: Duration = .milliseconds(300)

/// Runs one URL and returns its descriptor and how long the batch took.
func timed(_ url: String, _ pipeline: AttachmentPipeline, deadline: Duration = .seconds(20)) async -> (AttachmentDescriptor, Duration) {
    let started = ContinuousClock.now
    let d = await fetchOne(url, pipeline, deadline: deadline)
    return (d, ContinuousClock.now - started)
}

/// A timer or deadline fired when it should: not before `setting`, at most `timingSlack` after.
func expectNear(_ elapsed: Duration, _ setting: Duration, _ what: String) {
    #expect(elapsed >= setting - .milliseconds(5), "\(what): \(elapsed) is before \(setting)")
    #expect(elapsed < setting + timingSlack, "\(what): \(elapsed) is late for \(setting)")
}

/// Pixel size of an image file, read back with libvips.
func imageSize(_ path: String) -> (width: Int, height: Int)? {
    guard let image = af_vips_image_new_from_file(path, VIPS_FAIL_ON_NONE) else { return nil }
    defer { g_object_unref(UnsafeMutableRawPointer(image)) }
    return (Int(vips_image_get_width(image)), Int(vips_image_get_height(image)))
}

/// SHA-256 of a file by coreutils' sha256sum, an implementation independent of ours.
func sha256sum(_ path: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
    process.arguments = [path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(String(decoding: data, as: UTF8.self).prefix(64))
}

func fileSize(_ path: String) -> Int64 {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? -1
}



/// Writes a black JPEG of the given size with libvips. Progressive JPEGs cannot be shrunk on
/// load, so decoding a large one is slow: the tool for testing thumbnail budgets.
func writeBlackJPEG(path: String, width: Int, height: Int, progressive: Bool) throws {
    struct VipsFailed: Error {}
    try Vips.ensureStarted()
    guard af_test_write_black_jpeg(path, Int32(width), Int32(height), progressive ? 1 : 0) == 0 else { throw VipsFailed() }
}

/// Writes an uncompressed noise PNG (3 or 4 bands) or a quality-100 noise JPEG with an EXIF
/// orientation: images far over the limit that no encoder setting alone brings under it.
func writeNoiseImage(path: String, width: Int, height: Int, png bands: Int? = nil, jpegOrientation: Int = 1) throws {
    struct VipsFailed: Error {}
    // The library's own start, once per process: libvips' lazy start on first use is not
    // thread-safe (two tests writing at once abort in vips_class_build_hash_cb).
    try Vips.ensureStarted()
    let status = bands.map { af_test_write_noise_png(path, Int32(width), Int32(height), Int32($0)) }
        ?? af_test_write_noise_jpeg(path, Int32(width), Int32(height), Int32(jpegOrientation))
    guard status == 0 else { throw VipsFailed() }
}

/// Writes the image at `source` as a quality-95 JPEG tagged with EXIF `orientation`, its
/// pixels as stored: what a phone writes when it saves a photo the way the sensor read it.
func writeOrientedJPEG(from source: String, to path: String, orientation: Int) throws {
    struct VipsFailed: Error {}
    try Vips.ensureStarted()
    guard af_test_write_oriented_jpeg(source, path, Int32(orientation)) == 0 else { throw VipsFailed() }
}
