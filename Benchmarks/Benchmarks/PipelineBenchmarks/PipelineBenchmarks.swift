import AttachFetch
import Benchmark
import Foundation
import LoopbackHTTPServer

/// TestMedia, found from this file's place in the repository.
private let testMedia = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("TestMedia").path

/// A 12-megapixel JPEG from the comparison corpus, when Benchmarks/compare has made it.
private let largeJPEG = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent(".compare/corpus/mixed/photo3_4000x3000.jpg").path

/// A 20 MB PNG of noise (uncompressed), made once with ffmpeg for the fit benchmark; nil when
/// ffmpeg is not installed.
private let largePNG: String? = {
    let directory = URL(fileURLWithPath: largeJPEG).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("fit").path
    let path = directory + "/noise-2600x1950.png"
    if FileManager.default.fileExists(atPath: path) { return path }
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let ffmpeg = Process()
    ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    ffmpeg.arguments = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                        "nullsrc=s=2600x1950,geq=r='random(1)*255':g='random(2)*255':b='random(3)*255'",
                        "-frames:v", "1", "-pix_fmt", "rgb24", "-compression_level", "0", path]
    guard (try? ffmpeg.run()) != nil else { return nil }
    ffmpeg.waitUntilExit()
    return ffmpeg.terminationStatus == 0 ? path : nil
}()

/// One loopback server and one pipeline for the whole run (both are shared, as in a service).
private final class Fixture: Sendable {
    let server: LoopbackHTTPServer
    let pipeline: AttachmentPipeline

    init() throws {
        let routes = MediaRoutes(directory: testMedia)
        server = try LoopbackHTTPServer { request, connection in routes.handle(request, connection) }
        var configuration = AttachFetchConfiguration()
        configuration.allowPrivateNetwork = true // the benchmark's server is on loopback
        pipeline = try AttachmentPipeline(configuration: configuration)
    }

    /// Runs a batch and removes the files it kept, so iterations do not accumulate.
    func run(_ paths: [String]) async -> AttachmentBatch {
        let batch = await pipeline.process(paths.map { AttachmentRequest(url: "\(server.baseURL)/\($0)") })
        if let directory = batch.directory { try? FileManager.default.removeItem(atPath: directory) }
        return batch
    }
}

private let fixture = try! Fixture()

/// The comparison corpus' 640x480 JPEGs (about 40 KB each), served on loopback, when
/// Benchmarks/compare has made them.
private let smallJPEGs: (server: LoopbackHTTPServer, names: [String])? = {
    let directory = URL(fileURLWithPath: largeJPEG).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("small").path
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory).filter({ $0.hasSuffix(".jpg") }).sorted(),
          !names.isEmpty else { return nil }
    let routes = MediaRoutes(directory: directory)
    guard let server = try? LoopbackHTTPServer(handler: { request, connection in routes.handle(request, connection) }) else { return nil }
    return (server, names)
}()

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .peakMemoryResident, .throughput],
        maxDuration: .seconds(5),
        maxIterations: 200
    )

    // The stages alone, without the network.
    Benchmark("Policy: media table lookup and address policy, 1,000 each") { benchmark in
        let policy = AddressPolicy()
        let mimes = ["image/jpeg", "audio/x-wav", "video/mp4", "image/webp", "text/html"]
        let addresses = ["8.8.8.8", "10.1.2.3", "::ffff:169.254.169.254", "2606:4700::1111", "127.0.0.1"]
        for _ in benchmark.scaledIterations {
            for index in 0..<1_000 {
                blackHole(MediaType.forSniffedMIME(mimes[index % mimes.count]))
                blackHole(policy.refusal(for: addresses[index % addresses.count]))
            }
        }
    }

    for (label, file) in [("small PNG", "\(testMedia)/alpha.png"), ("JPEG 480x320", "\(testMedia)/photo.jpg"),
                          ("animated GIF", "\(testMedia)/animated.gif"), ("MP3 (sniff only)", "\(testMedia)/tone.mp3"),
                          // Made by Benchmarks/compare; skipped when that has not run.
                          ("12 MP JPEG, shrink-on-load", largeJPEG)] {
        guard FileManager.default.fileExists(atPath: file) else { continue }
        Benchmark("Sniff + decode + thumbnail: \(label)") { benchmark in
            let inspector = try! LocalMediaInspector(configuration: inProcess)
            let scratch = NSTemporaryDirectory() + "/af-bench-\(getpid())"
            for _ in benchmark.scaledIterations {
                let descriptor = inspector.inspect(file: file, thumbnailBase: scratch)
                if let thumbnail = descriptor.thumbnail { unlink(thumbnail.file) }
                blackHole(descriptor)
            }
        }
    }

    // Normalising and FFmpeg, as stages on files (the descriptor's `file` is the converted one).
    var cases: [(String, String, Double?)] = [
        ("Convert: WebP 160x120 to JPEG", "\(testMedia)/image.webp", nil),
        ("Convert: HEIC 480x320 to JPEG", "\(testMedia)/image.heic", nil),
        ("Convert: AVIF 480x320 to JPEG", "\(testMedia)/image.avif", nil),
        ("Convert: animated WebP to GIF", "\(testMedia)/animated.webp", nil),
        ("Probe + poster: MP4 at 0 s", "\(testMedia)/clip.mp4", nil),
        ("Probe + poster: 10-minute MP4 at 300 s", "\(testMedia)/long.mp4", 300),
        ("Probe + poster: 10-minute MP4 past its end", "\(testMedia)/long.mp4", 100_000),
        ("Probe: M4A", "\(testMedia)/tone.m4a", nil),
    ]
    if let largePNG { cases.append(("Fit: 20 MB PNG under 10 MiB", largePNG, nil)) }
    for (label, file, time) in cases {
        Benchmark(label, configuration: .init(maxDuration: .seconds(5), maxIterations: label.hasPrefix("Fit") ? 10 : 200)) { benchmark in
            let inspector = try! LocalMediaInspector(configuration: inProcess)
            let scratch = NSTemporaryDirectory() + "/af-bench-\(getpid())"
            for _ in benchmark.scaledIterations {
                let descriptor = inspector.inspect(file: file, thumbnailBase: scratch, thumbnailTime: time)
                precondition(descriptor.status == .ready, "\(label): \(descriptor.reason?.message ?? "")")
                if let thumbnail = descriptor.thumbnail { unlink(thumbnail.file) }
                if let delivered = descriptor.file, delivered != file { unlink(delivered) }
                blackHole(descriptor)
            }
        }
    }

    // Many small images, each downloaded, sniffed, decoded and thumbnailed.
    Benchmark("Pipeline: 32 small images (JPEG, PNG, GIF) with thumbnails") { benchmark in
        let paths = (0..<32).map { ["media/photo.jpg", "media/alpha.png", "media/animated.gif", "media/rotated.jpg"][$0 % 4] + "?n=\($0)" }
        for _ in benchmark.scaledIterations {
            blackHole(await fixture.run(paths))
        }
    }

    // The issue's small-image case inside one process (the library's use): 200 JPEGs of
    // 640x480 per batch; throughput x 200 = attachments per second.
    if let smallJPEGs {
        Benchmark("Pipeline: 200 small JPEGs (640x480) with thumbnails, one batch",
                  configuration: .init(maxDuration: .seconds(10), maxIterations: 50)) { benchmark in
            let urls = (0..<200).map { "\(smallJPEGs.server.baseURL)/media/\(smallJPEGs.names[$0 % smallJPEGs.names.count])?n=\($0)" }
            for _ in benchmark.scaledIterations {
                let batch = await fixture.pipeline.process(urls.map { AttachmentRequest(url: $0) })
                precondition(batch.attachments.allSatisfy { $0.status == .ready && $0.thumbnail != nil })
                if let directory = batch.directory { try? FileManager.default.removeItem(atPath: directory) }
                blackHole(batch)
            }
        }
    }

    // A mixed batch: every supported type plus inputs that must be refused.
    Benchmark("Pipeline: mixed batch of 24") { benchmark in
        let files = ["photo.jpg", "tone.mp3", "clip.mp4", "image.webp", "tone.wav", "clip.avi", "truncated.jpg", "tone.m4a"]
        let paths = (0..<24).map { "media/\(files[$0 % files.count])?n=\($0)" }
        for _ in benchmark.scaledIterations {
            blackHole(await fixture.run(paths))
        }
    }

    // Large bodies: streamed to disk and hashed, never held in memory.
    Benchmark("Pipeline: 8 videos of 40 MB", configuration: .init(maxDuration: .seconds(10), maxIterations: 10)) { benchmark in
        let paths = (0..<8).map { "synth/clip.mp4?bytes=40000000&n=\($0)" }
        for _ in benchmark.scaledIterations {
            blackHole(await fixture.run(paths))
        }
    }
}

/// The decode micro-benchmarks measure the decoders themselves, in this process (the pipeline
/// benchmarks include the worker processes).
private let inProcess: AttachFetchConfiguration = {
    var configuration = AttachFetchConfiguration()
    configuration.isolation = .none
    return configuration
}()
