import CVips
import Foundation
import LoopbackHTTPServer
import Testing
@testable import AttachFetch

extension DeadlineBoundSuites {
    /// Audio and video through FFmpeg's libraries: probe, kind, poster frame, and its limits.
    // Serialized: a test bounds the time of a seek to a poster frame.
    @Suite(.serialized) struct ProbeTests {
        /// Fetches one TestMedia file; its files live in `scratch`.
        func fetch(_ file: String, into scratch: Scratch, time: Double? = nil, clip: ClippingRectangle? = nil,
                   _ adjust: (inout AttachFetchConfiguration) -> Void = { _ in }) async throws -> AttachmentDescriptor {
            try await withPipeline(scratch, adjust) { pipeline in
                try await withMediaServer { server in
                    await fetchOne("\(server.baseURL)/media/\(file)", pipeline, clip: clip, thumbnailTime: time)
                }
            }
        }

        @Test func videoGetsDurationCodecsSizeAndAPosterThumbnail() async throws {
            let scratch = Scratch()
            let d = try await fetch("clip.mp4", into: scratch)
            #expect(d.status == .ready, "\(d.reason?.message ?? "")")
            #expect(d.kind == .video)
            #expect(d.videoCodec == "h264")
            #expect(d.audioCodec == nil)
            #expect(d.width == 160 && d.height == 120)
            #expect(d.duration.map { abs($0 - 1) < 0.05 } == true)
            #expect(d.timings.probe != nil)
            let thumbnail = try #require(d.thumbnail)
            #expect(thumbnail.time == 0)
            #expect(imageSize(thumbnail.file).map { $0.width == 160 && $0.height == 120 } == true)
            #expect(thumbnail.file.hasSuffix(".thumb.jpg"))
        }

        @Test func posterFrameIsAtTheRequestedTimeInALongVideo() async throws {
            let scratch = Scratch()
            let start = try await fetch("long.mp4", into: scratch)
            let middle = try await fetch("long.mp4", into: scratch, time: 300.4)
            #expect(middle.status == .ready, "\(middle.reason?.message ?? "")")
            #expect(middle.duration.map { abs($0 - 600) < 1 } == true, "\(String(describing: middle.duration))")
            // 2 frames a second: the frame shown is within one frame of the request.
            let time = try #require(middle.thumbnail?.time)
            #expect(abs(time - 300.4) <= 0.5, "poster at \(time)")
            // A different picture from the first frame's (testsrc draws a running counter).
            let first = try Data(contentsOf: URL(fileURLWithPath: try #require(start.thumbnail?.file)))
            let later = try Data(contentsOf: URL(fileURLWithPath: try #require(middle.thumbnail?.file)))
            #expect(first != later)
        }

        /// The decode budget: with one frame allowed after the seek, the poster is the keyframe
        /// before the requested time (300 s; a keyframe every 10 s), not the frame at it (300.5 s).
        @Test func posterDecodingStopsAtTheFrameBudget() async throws {
            let scratch = Scratch()
            let budgeted = try await fetch("long.mp4", into: scratch, time: 300.4) { $0.maxVideoDecodeFrames = 1 }
            #expect(budgeted.status == .ready, "\(budgeted.reason?.message ?? "")")
            let time = try #require(budgeted.thumbnail?.time)
            #expect(abs(time - 300) < 0.01, "poster at \(time)")
        }

        @Test func thumbnailTimePastTheEndIsClampedToTheLastFrame() async throws {
            let scratch = Scratch()
            let started = ContinuousClock.now
            let d = try await fetch("long.mp4", into: scratch, time: 100_000)
            #expect(d.status == .ready, "\(d.reason?.message ?? "")")
            let time = try #require(d.thumbnail?.time)
            #expect(time >= 598.5 && time <= 600, "poster at \(time)")
            // A seek, not a decode of ten minutes (generous bound for a noisy machine).
            #expect(ContinuousClock.now - started < .seconds(5))
            let negative = try await fetch("long.mp4", into: scratch, time: -5)
            #expect(negative.thumbnail?.time == 0)
        }

        @Test func posterUsesTheClippingRectangleLikeImages() async throws {
            let scratch = Scratch()
            let d = try await fetch("clip.mp4", into: scratch, clip: try ClippingRectangle(x: 0, y: 0, width: 0.5, height: 1))
            let thumbnail = try #require(d.thumbnail)
            #expect(thumbnail.width == 80 && thumbnail.height == 120)
            #expect(imageSize(thumbnail.file).map { $0.width == 80 && $0.height == 120 } == true)
        }

        @Test func displayRotationTurnsThePoster() async throws {
            let scratch = Scratch()
            let d = try await fetch("rotated.mp4", into: scratch)
            #expect(d.status == .ready, "\(d.reason?.message ?? "")")
            #expect(d.width == 120 && d.height == 160)
            #expect(d.thumbnail.map { $0.width == 120 && $0.height == 160 } == true)
        }

        @Test func corruptVideoIsCorruptMediaAndNothingIsKept() async throws {
            let scratch = Scratch()
            let d = try await fetch("corrupt.mp4", into: scratch)
            #expect(d.status == .rejected)
            #expect(d.reason?.code == .corruptMedia)
            #expect(d.reason?.message.contains("does not decode") == true, "\(d.reason?.message ?? "")")
            #expect(scratch.tree() == [])
        }

        @Test func codecOutsideTheSupportedFormatsIsRefused() async throws {
            let scratch = Scratch()
            // Converting off: refused, naming the codec. (On, it is re-encoded: PlayabilityTests.)
            let d = try await fetch("vp9.mp4", into: scratch) { $0.normalize = false }
            #expect(d.status == .rejected)
            #expect(d.reason?.code == .unsupportedType)
            #expect(d.reason?.message.contains("the video is VP9") == true, "named as people know it: \(d.reason?.message ?? "")")
            #expect(scratch.tree() == [])
        }

        @Test func audioOnlyMPEG4IsAudio() async throws {
            let scratch = Scratch()
            let d = try await fetch("audio-only.mp4", into: scratch)
            #expect(d.status == .ready, "\(d.reason?.message ?? "")")
            #expect(d.sourceMimeType == "video/mp4")
            #expect(d.mimeType == "audio/mp4")
            #expect(d.kind == .audio)
            #expect(d.uti == "public.mpeg-4-audio")
            #expect(d.file?.hasSuffix(".m4a") == true)
            #expect(d.audioCodec == "aac")
            #expect(d.videoCodec == nil)
            #expect(d.thumbnail == nil)
            #expect(d.duration.map { abs($0 - 2) < 0.1 } == true)
            // As audio, it answers to the audio limit.
            let strict = Scratch()
            let small = try await fetch("audio-only.mp4", into: strict) { $0.sizeLimits.audio = 5_000 }
            #expect(small.reason?.code == .sizeLimitExceeded)
            #expect(small.reason?.message.contains("audio limit of 5000") == true, "\(small.reason?.message ?? "")")
            #expect(strict.tree() == [])
        }

        @Test func videoInAnM4ABrandedFileIsVideo() async throws {
            let scratch = Scratch()
            let d = try await fetch("video-branded.m4a", into: scratch)
            #expect(d.status == .ready, "\(d.reason?.message ?? "")")
            #expect(d.sourceMimeType == "audio/mp4")
            #expect(d.mimeType == "video/mp4")
            #expect(d.kind == .video)
            #expect(d.file?.hasSuffix(".mp4") == true)
            #expect(d.thumbnail != nil)
        }

        @Test func audioIsProbedWithoutAThumbnail() async throws {
            let scratch = Scratch()
            for (file, codec) in [("tone.mp3", "mp3"), ("tone.wav", "pcm_s16le"), ("tone.aiff", "pcm_s16be"), ("tone.m4a", "aac")] {
                let d = try await fetch(file, into: scratch)
                #expect(d.status == .ready, "\(file): \(d.reason?.message ?? "")")
                #expect(d.audioCodec == codec, "\(file)")
                #expect(d.thumbnail == nil)
            }
        }

        /// FFmpeg reads only the file it is given: a playlist naming a loopback URL, handed to the
        /// prober as if it were MPEG-4 or MP3, opens no connection and is refused.
        @Test func ffmpegOpensNoProtocolAndNoOtherDemuxer() async throws {
            let scratch = Scratch()
            try await startLibraries()
            try await withMediaServer { server in
                let playlists = [
                    "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n\(server.baseURL)/media/clip.mp4\n#EXT-X-ENDLIST\n",
                    "ffconcat version 1.0\nfile '\(server.baseURL)/media/clip.mp4'\n",
                    "\(server.baseURL)/media/tone.mp3\n",
                ]
                for (index, text) in playlists.enumerated() {
                    let path = "\(scratch.path)/list-\(index)"
                    try text.write(toFile: path, atomically: false, encoding: .utf8)
                    for type in [MediaType.mp4, .mp3, .mpeg, .avi] {
                        let result = MediaProber.probe(source: path, type: type, thumbnailTime: nil, thumbnailBase: nil,
                                                       shape: .clip(.whole), limits: .init(AttachFetchConfiguration()))
                        guard case .failure(let problem) = result else {
                            Issue.record("\(type.mimeType) accepted a playlist")
                            continue
                        }
                        #expect(problem.code == .corruptMedia)
                    }
                }
                #expect(server.acceptedConnections == 0, "\(server.requestLog)")
            }
        }
    }
}
