import Foundation
import Testing
@testable import AttachFetch
@testable import AttachFetchMedia

/// Sound and picture stay together through a transcode, on clips made the way the world makes
/// them (a transport stream whose clock starts late, a WebM whose sound starts after its
/// picture, sound with a gap, a program stream), and a delivered file that is not what its
/// source promised is never `ready`. Offsets and ends are read with ffprobe: each stream's
/// `start_time` and its packets' times.
@Suite struct TranscodeSyncTests {
    /// Sound and picture may drift apart by this much more than they are in the source.
    static let tolerance = 0.04

    /// ffprobe's `start_time` of the first video and first audio stream, and the end of each
    /// stream's last packet (pts + duration), in seconds.
    static func timeline(_ file: String) async throws -> (video: (start: Double, end: Double)?, audio: (start: Double, end: Double)?) {
        func read(_ selector: String) async throws -> (start: Double, end: Double)? {
            // A transport stream's programs repeat the stream: the first value is the one.
            let start = try await tool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", selector, "-show_entries", "stream=start_time",
                                                           "-of", "csv=p=0", file]).output
                .split(whereSeparator: { $0 == "\n" || $0 == "," }).lazy.compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }.first
            guard let startTime = start else { return nil }
            let packets = try await tool("/usr/bin/ffprobe", ["-v", "error", "-select_streams", selector, "-show_entries",
                                                             "packet=pts_time,duration_time", "-of", "csv=p=0", file]).output
            // A packet's end where its duration is known (MPEG-4's video packets read back
            // without one: then its start, at most a frame early).
            let end = packets.split(separator: "\n").compactMap { line -> Double? in
                let fields = line.split(separator: ",").map { Double($0) }
                guard let pts = fields.first ?? nil else { return nil }
                return pts + ((fields.count > 1 ? fields[1] : nil) ?? 0)
            }.max() ?? startTime
            return (startTime, end)
        }
        return (try await read("v:0"), try await read("a:0"))
    }

    static func ffmpeg(_ arguments: [String]) throws {
        let made = try tool("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-y"] + arguments)
        try #require(made.status == 0, "ffmpeg \(arguments): \(made.errors)")
    }

    @Test func soundAndPictureKeepTheSourcesOffset() async throws {
        let media = Scratch(), scratch = Scratch()
        let picture = ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25"]
        let tone = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"]
        try await offPool {
            // A broadcast or camera transport stream: its clock starts at 1.44 s (plus the muxer's own delay).
            try Self.ffmpeg(picture + tone + ["-t", "10", "-c:v", "mpeg2video", "-c:a", "mp2", "-output_ts_offset", "1.44", "-f", "mpegts",
                                              "\(media.path)/late-clock.ts"])
            // MediaRecorder's way: the sound starts a second after the picture.
            try Self.ffmpeg(picture + ["-itsoffset", "1"] + tone + ["-t", "6", "-c:v", "libvpx", "-deadline", "realtime", "-b:v", "500k",
                                                                   "-c:a", "libopus", "\(media.path)/late-sound.webm"])
            // Two seconds of sound missing in the middle: a gap in its timestamps.
            try Self.ffmpeg(picture + tone + ["-t", "8", "-af", "aselect='not(between(t,3,5))',asetpts=PTS", "-c:v", "libvpx",
                                              "-deadline", "realtime", "-b:v", "500k", "-c:a", "libopus", "\(media.path)/gap.webm"])
            // An MPEG program stream.
            try Self.ffmpeg(picture + ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100", "-t", "6", "-c:v", "mpeg1video",
                                       "-c:a", "mp2", "-f", "mpeg", "\(media.path)/program.mpg"])
        }
        let names = ["late-clock.ts", "late-sound.webm", "gap.webm", "program.mpg"]
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let batch = await pipeline.process(names.map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") }, deadline: .seconds(60))
                for (name, d) in zip(names, batch.attachments) {
                    #expect(d.status == .ready, "\(name): \(d.reason?.message ?? "")")
                    let file = try #require(d.file, "\(name)")
                    let source = try await Self.timeline("\(media.path)/\(name)"), delivered = try await Self.timeline(file)
                    let sourceVideo = try #require(source.video), sourceAudio = try #require(source.audio)
                    let video = try #require(delivered.video, "\(name): no video"), audio = try #require(delivered.audio, "\(name): no audio")
                    let sourceOffset = sourceAudio.start - sourceVideo.start, offset = audio.start - video.start
                    #expect(abs(offset - sourceOffset) <= Self.tolerance, "\(name): sound \(offset) s after picture, the source \(sourceOffset) s")
                    // A program stream iOS plays is delivered as it is: its own clock.
                    guard d.transforms?.contains(.transcoded) == true else {
                        #expect(try sha256sum(file) == sha256sum("\(media.path)/\(name)"), "\(name): \(d.transforms ?? [])")
                        continue
                    }
                    // The file starts at the earlier stream; its ends are the source's, rebased.
                    let origin = min(sourceVideo.start, sourceAudio.start)
                    #expect(min(video.start, audio.start) <= Self.tolerance, "\(name): starts at \(min(video.start, audio.start)) s")
                    #expect(abs(audio.end - (sourceAudio.end - origin)) <= 0.1, "\(name): sound ends at \(audio.end) s, the source's at \(sourceAudio.end - origin) s")
                    #expect(abs(video.end - (sourceVideo.end - origin)) <= 0.1 + 0.04, "\(name): picture ends at \(video.end) s, the source's at \(sourceVideo.end - origin) s")
                    #expect(try !RealWorldCorpusTests.notPlayableByFFprobe(file), "\(name)")
                }
            }
        }
    }

    /// A remuxed file starts at 0 whatever clock its source kept: an HLS segment's at 3600 s (a
    /// live stream's segments all start late) and a Matroska file cut from 5 s. The common start
    /// is taken off, the offset between sound and picture stays, and the descriptor's duration is
    /// the streams' length, not the source's clock plus it.
    @Test func aRemuxedFileStartsAtZero() async throws {
        let media = Scratch(), scratch = Scratch()
        let picture = ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25"]
        let tone = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000"]
        let playable = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac"]
        try await offPool {
            try Self.ffmpeg(picture + tone + ["-t", "4"] + playable + ["-output_ts_offset", "3600", "-f", "mpegts", "\(media.path)/segment.ts"])
            try Self.ffmpeg(picture + tone + ["-t", "4"] + playable + ["-output_ts_offset", "5", "\(media.path)/from-5s.mkv"])
        }
        let names = ["segment.ts", "from-5s.mkv"]
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let batch = await pipeline.process(names.map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") }, deadline: .seconds(60))
                for (name, d) in zip(names, batch.attachments) {
                    #expect(d.status == .ready && d.transforms == [.remuxed], "\(name): \(d.transforms ?? []) \(d.reason?.message ?? "")")
                    let file = try #require(d.file, "\(name)")
                    let source = try await Self.timeline("\(media.path)/\(name)"), delivered = try await Self.timeline(file)
                    let sourceVideo = try #require(source.video), sourceAudio = try #require(source.audio)
                    let video = try #require(delivered.video, "\(name): no video"), audio = try #require(delivered.audio, "\(name): no audio")
                    #expect(min(sourceVideo.start, sourceAudio.start) >= 4.9, "\(name): the source starts at \(min(sourceVideo.start, sourceAudio.start)) s")
                    #expect(min(video.start, audio.start) <= Self.tolerance, "\(name): starts at \(min(video.start, audio.start)) s")
                    let sourceOffset = sourceAudio.start - sourceVideo.start, offset = audio.start - video.start
                    #expect(abs(offset - sourceOffset) <= Self.tolerance, "\(name): sound \(offset) s after picture, the source \(sourceOffset) s")
                    let duration = try #require(d.duration, "\(name)")
                    #expect(abs(duration - 4) <= 0.2, "\(name): described as \(duration) s, for 4 s of streams")
                }
            }
        }
    }

    /// An MPEG-4 file whose movie header claims 10 s for 2 s of samples is described by its
    /// samples, 2 s, and the header's claim is kept beside it; a file whose header is true gets
    /// no `statedDuration`.
    @Test func aHeaderThatLiesAboutDurationIsNotBelieved() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try Self.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=sample_rate=48000", "-t", "2",
                             "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "\(media.path)/true.mp4"])
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(media.path)/true.mp4")))
            // mvhd: size, type, version and flags, two dates, then the time scale and duration (version 0).
            let mvhd = try #require(bytes.firstRange(of: Array("mvhd".utf8))?.lowerBound)
            try #require(bytes[mvhd + 4] == 0, "a version-0 mvhd")
            let scale = bytes[mvhd + 16..<mvhd + 20].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let claimed = scale * 10
            for index in 0..<4 { bytes[mvhd + 20 + index] = UInt8(truncatingIfNeeded: claimed >> (24 - 8 * UInt32(index))) }
            try Data(bytes).write(to: URL(fileURLWithPath: "\(media.path)/lying.mp4"))
        }
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let batch = await pipeline.process(["lying.mp4", "true.mp4"].map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") })
                let (lying, honest) = (batch.attachments[0], batch.attachments[1])
                #expect(lying.status == .ready, "\(lying.reason?.message ?? "")")
                #expect(lying.duration.map { abs($0 - 2) <= 0.1 } == true && lying.statedDuration.map { abs($0 - 10) <= 0.01 } == true,
                        "described as \(lying.duration ?? -1) s, stated \(lying.statedDuration ?? -1) s")
                #expect(honest.duration.map { abs($0 - 2) <= 0.1 } == true && honest.statedDuration == nil)
            }
        }
    }

    /// A gap in the sound stays a gap in time: the sound after it is where the source has it
    /// (filled with silence, so the drift stays bounded), not two seconds early.
    @Test func soundAfterAGapIsWhereTheSourceHasIt() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try Self.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                             "-t", "8", "-af", "aselect='not(between(t,3,5))',asetpts=PTS", "-c:v", "libvpx", "-deadline", "realtime",
                             "-c:a", "libopus", "\(media.path)/gap.webm"])
        }
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let d = await fetchOne("\(server.baseURL)/media/gap.webm", pipeline, deadline: .seconds(60))
                let file = try #require(d.file, "\(d.reason?.message ?? "")")
                // The tone's loudness each 0.5 s: silent through the gap, sound on both sides.
                let levels = try await tool("/usr/bin/ffmpeg", ["-v", "info", "-nostdin", "-i", file, "-map", "0:a", "-af",
                                                               "asetnsamples=24000,astats=metadata=1:reset=1,ametadata=print:key=lavfi.astats.Overall.RMS_level",
                                                               "-f", "null", "-"]).errors
                let rms = levels.split(separator: "\n").compactMap { line -> Double? in
                    guard let range = line.range(of: "RMS_level=") else { return nil }
                    return Double(line[range.upperBound...]) ?? -.infinity
                }
                #expect(rms.count >= 15, "\(rms)")
                // 0.5-s windows: 0-3 s sound (windows 0-5), 3-5 s silence (6-9), 5-8 s sound (10-15).
                #expect(rms.prefix(5).allSatisfy { $0 > -30 }, "\(rms)")
                #expect(rms.dropFirst(7).prefix(2).allSatisfy { $0 < -60 }, "\(rms)")
                #expect(rms.dropFirst(11).prefix(4).allSatisfy { $0 > -30 }, "\(rms)")
            }
        }
    }

    /// A WebM whose video packets after the first are damaged decodes to one frame beside 7 s
    /// of sound: not what the source promised, refused. A still picture with sound (one frame
    /// in the source too) is delivered.
    @Test func aPictureThatStopsDecodingIsRefusedAndAStillIsNot() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try Self.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "7", "-c:v", "libvpx", "-g", "1000",
                             "-threads", "1", "\(media.path)/video.ivf"])
            try Self.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "7", "-c:a", "libopus", "\(media.path)/sound.opus"])
            // IVF: a 32-byte header, then each frame behind 12 bytes (size, time): every frame
            // after the first is overwritten with noise, the framing kept.
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(media.path)/video.ivf")))
            var random = SeededRandom(state: 7)
            var offset = 32, frame = 0
            while offset + 12 <= bytes.count {
                let size = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
                if frame > 0 { for index in offset + 12..<min(bytes.count, offset + 12 + size) { bytes[index] = UInt8.random(in: 0...255, using: &random) } }
                offset += 12 + size
                frame += 1
            }
            try Data(bytes).write(to: URL(fileURLWithPath: "\(media.path)/damaged.ivf"))
            try Self.ffmpeg(["-i", "\(media.path)/damaged.ivf", "-i", "\(media.path)/sound.opus", "-c", "copy", "\(media.path)/damaged.webm"])
            try Self.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=0.04", "-f", "lavfi",
                             "-i", "sine=frequency=440:sample_rate=48000:duration=6", "-c:v", "libvpx", "-c:a", "libopus", "\(media.path)/still.webm"])
        }
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let damaged = await fetchOne("\(server.baseURL)/media/damaged.webm", pipeline, deadline: .seconds(60))
                #expect(damaged.status == .rejected && damaged.reason?.code == .corruptMedia, "\(damaged.status) \(damaged.reason?.message ?? "")")
                #expect(damaged.reason?.message.contains("1 frame") == true, "\(damaged.reason?.message ?? "")")
                let still = await fetchOne("\(server.baseURL)/media/still.webm", pipeline, deadline: .seconds(60))
                #expect(still.status == .ready, "\(still.reason?.message ?? "")")
                #expect(abs((still.duration ?? 0) - 6) < 0.2, "\(still.duration ?? 0)")
            }
        }
    }

    /// The encoded size never passes the long edge the option sets, and both sides are even.
    @Test(arguments: [(1920, 1080, 17), (1920, 1080, 101), (1920, 1080, 1280), (321, 241, 1280), (1080, 1920, 720), (7, 5, 16)])
    func theOutputFitsTheLongEdgeWithEvenSides(_ size: (Int, Int, Int)) {
        let (width, height, edge) = size
        let made = VideoEncoder.outputSize(width: width, height: height, maxLongEdge: edge)
        #expect(max(made.width, made.height) <= max(edge, 2) && made.width % 2 == 0 && made.height % 2 == 0, "\(made)")
        #expect(made.width <= max(width, 2) && made.height <= max(height, 2), "never enlarged: \(made)")
        // The aspect ratio within a pixel's rounding either way.
        #expect(abs(Double(made.width) / Double(made.height) - Double(width) / Double(height)) < 2.5 / Double(min(made.width, made.height)), "\(made)")
    }

    /// End to end: `--transcode-max-edge 17` makes 16x8 from 1920x1080, and the descriptor keeps
    /// the source's own size beside the delivered one.
    @Test func aTranscodedVideoReportsItsSourcesSizeAndStaysWithinTheEdge() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try Self.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=25", "-t", "1", "-c:v", "libvpx", "-deadline", "realtime",
                             "\(media.path)/wide.webm"])
        }
        try await withPipeline(scratch, { $0.transcodeMaxLongEdge = 17 }) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let d = await fetchOne("\(server.baseURL)/media/wide.webm", pipeline, deadline: .seconds(60))
                #expect(d.status == .ready, "\(d.reason?.message ?? "")")
                #expect(d.width == 16 && d.height == 8, "\(d.width ?? 0)x\(d.height ?? 0)")
                #expect(d.sourceWidth == 1920 && d.sourceHeight == 1080, "\(d.sourceWidth ?? 0)x\(d.sourceHeight ?? 0)")
            }
        }
    }

    /// Every video codec's frames are held to `maxImagePixels` before they are decoded, as
    /// H.264 in MPEG-4 is: a VP8 WebM over the limit is refused at once, one under it is made.
    @Test func aVP8StreamOverThePixelLimitIsRefusedBeforeDecoding() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try Self.ffmpeg(["-f", "lavfi", "-i", "color=c=gray:size=2000x1500:rate=5", "-t", "0.4", "-c:v", "libvpx", "\(media.path)/over.webm"])
            try Self.ffmpeg(["-f", "lavfi", "-i", "color=c=gray:size=1500x1000:rate=5", "-t", "0.4", "-c:v", "libvpx", "\(media.path)/under.webm"])
        }
        try await withPipeline(scratch, { $0.maxImagePixels = 2_000_000 }) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                for _ in 0..<2 {
                    let batch = await pipeline.process(["over.webm", "under.webm"].map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") },
                                                       deadline: .seconds(60))
                    let over = batch.attachments[0], under = batch.attachments[1]
                    #expect(over.reason?.code == .pixelLimitExceeded, "\(over.status) \(over.reason?.message ?? "")")
                    #expect(over.reason?.message.contains("2000x1500") == true, "\(over.reason?.message ?? "")")
                    #expect(under.status == .ready, "\(under.reason?.message ?? "")")
                }
            }
        }
    }

    /// A GIF whose header claims a 65535x65535 screen around 320x240 frames is held to the
    /// pixel budget like its frames: other decoders allocate the whole screen.
    @Test func aGIFsLogicalScreenIsCheckedLikeItsFrames() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try Self.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=10", "-t", "0.5", "\(media.path)/screen.gif"])
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(media.path)/screen.gif")))
            bytes.replaceSubrange(6..<10, with: [0xFF, 0xFF, 0xFF, 0xFF])
            try Data(bytes).write(to: URL(fileURLWithPath: "\(media.path)/huge-screen.gif"))
        }
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let huge = await fetchOne("\(server.baseURL)/media/huge-screen.gif", pipeline)
                #expect(huge.reason?.code == .pixelLimitExceeded && huge.reason?.message.contains("65535x65535") == true,
                        "\(huge.status) \(huge.reason?.message ?? "")")
                let plain = await fetchOne("\(server.baseURL)/media/screen.gif", pipeline)
                #expect(plain.status == .ready, "\(plain.reason?.message ?? "")")
            }
        }
    }

    /// A Matroska header that states 10^12 s does not size the bit rate: the clip is made as
    /// the honest file is, well above the floor a lie would give.
    @Test func aLyingDurationDoesNotStarveTheBitRate() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            try Self.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25", "-t", "5", "-c:v", "libvpx", "-deadline", "realtime",
                             "-b:v", "2M", "\(media.path)/honest.mkv"])
            // Segment Info's Duration: ID 0x4489, an 8-byte float in milliseconds.
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(media.path)/honest.mkv")))
            let durationID: [UInt8] = [0x44, 0x89, 0x88]
            let found = bytes.firstRange(of: durationID)?.lowerBound
            let at = try #require(found, "no Duration")
            try #require(at + 11 <= bytes.count, "a Duration without its 8 bytes")
            bytes.replaceSubrange(at + 3..<at + 11, with: withUnsafeBytes(of: Double(1e15).bitPattern.bigEndian) { [UInt8]($0) })
            try Data(bytes).write(to: URL(fileURLWithPath: "\(media.path)/lying.mkv"))
        }
        let claimed = try await tool("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", "\(media.path)/lying.mkv"])
        #expect((Double(claimed.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 1e9, "the header's claim: \(claimed.output)")
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let batch = await pipeline.process(["honest.mkv", "lying.mkv"].map { AttachmentRequest(url: "\(server.baseURL)/media/\($0)") },
                                                   deadline: .seconds(60))
                let honest = batch.attachments[0], lying = batch.attachments[1]
                #expect(honest.status == .ready && lying.status == .ready, "\(lying.reason?.message ?? "")")
                // The floor a lie would give is 200 kb/s (about 125 kB in 5 s). The speed ladder
                // picks each one's preset by the machine's load, so the two need not be alike
                // in size; an unstarved clip is well above the floor either way.
                let rates = (Double(honest.bytes ?? 0) * 8 / 5, Double(lying.bytes ?? 0) * 8 / 5)
                #expect(rates.0 > 400_000 && rates.1 > 400_000, "\(rates) b/s")
                #expect(abs((lying.duration ?? 0) - 5) < 0.2, "\(lying.duration ?? 0)")
            }
        }
    }
    /// MediaRecorder's WebM states no duration (it is written as it is recorded, never sought
    /// back): the clip is still made whole, its length read from its packets, in sync.
    @Test func aWebMThatStatesNoDurationIsMadeWholeAndInSync() async throws {
        let media = Scratch(), scratch = Scratch()
        try await offPool {
            // Written to a pipe, with no length given to the muxer, it cannot state a Duration or go
            // back for the Cues; the sound starts half a second after the picture.
            let made = try tool("/bin/sh", ["-c", "/usr/bin/ffmpeg -v error -nostdin -t 8 -f lavfi -i testsrc2=size=640x360:rate=25 -itsoffset 0.5 "
                                            + "-t 7.5 -f lavfi -i sine=frequency=440 -c:v libvpx -deadline realtime -b:v 500k -c:a libopus "
                                            + "-f webm pipe:1 > '\(media.path)/recorded.webm'"])
            try #require(made.status == 0, "\(made.errors)")
        }
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(media.path)/recorded.webm")))
        // Segment Info's Duration, ID 0x4489 with an 8-byte float: absent. Looked for before the
        // first Cluster (ID 0x1F43B675), where Info is: in the frames that follow, three bytes
        // in that order turn up by chance (once in about 30 files of this size).
        let cluster: [UInt8] = [0x1F, 0x43, 0xB6, 0x75], durationID: [UInt8] = [0x44, 0x89, 0x88]
        let firstCluster = try #require(bytes.firstRange(of: cluster)?.lowerBound, "no Cluster")
        let duration = bytes[..<firstCluster].firstRange(of: durationID)
        #expect(duration == nil, "the WebM states a Duration before its first Cluster")
        let stated = try await tool("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", "\(media.path)/recorded.webm"])
        #expect(stated.output.contains("N/A"), "ffprobe finds a duration: \(stated.output)")
        try await withPipeline(scratch) { pipeline in
            try await withMediaServer(directory: media.path) { server in
                let d = await fetchOne("\(server.baseURL)/media/recorded.webm", pipeline, deadline: .seconds(60))
                #expect(d.status == .ready && d.transforms == [.transcoded], "\(d.transforms ?? []) \(d.reason?.message ?? "")")
                #expect(abs((d.duration ?? 0) - 8) < 0.2, "\(d.duration ?? 0) s of 8")
                let file = try #require(d.file)
                let source = try await Self.timeline("\(media.path)/recorded.webm"), delivered = try await Self.timeline(file)
                let sourceOffset = try #require(source.audio).start - #require(source.video).start
                let offset = try #require(delivered.audio).start - #require(delivered.video).start
                #expect(abs(offset - sourceOffset) <= Self.tolerance, "sound \(offset) s after picture, the source \(sourceOffset) s")
            }
        }
    }
}
