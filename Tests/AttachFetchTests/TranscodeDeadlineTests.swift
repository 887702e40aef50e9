import Foundation
import Testing
@testable import AttachFetch

extension DeadlineBoundSuites {
    /// A clip that cannot be transcoded whole before the deadline is delivered by the deadline
    /// as what was encoded by then: a playable start, `trimmed`, never cached.
    @Suite(.serialized) struct TranscodeDeadlineTests {
        /// The clips' length: long enough that no 2-core machine transcodes it by a 4-s deadline.
        static let clipSeconds = 90

        @Test func aLong1080pClipUnderAShortDeadlineIsDeliveredTrimmedByTheDeadline() async throws {
            let media = Scratch(), scratch = Scratch()
            // MPEG-4 Part 2 in Matroska: quick to make here, transcoded like any WebM. 90 s of
            // 1080p at 15 frames a second take 8 s or more to transcode on 2 cores (a quiet
            // machine did 40 s of it in 3.4 s): a 4-s deadline gets part of them. About 40 MB.
            try await offPool {
                try VideoTranscodeTests.make(media.path, "long.mkv", size: "1920x1080", seconds: Self.clipSeconds, audio: true,
                                             ["-r", "15", "-c:v", "mpeg4", "-q:v", "16", "-c:a", "libvorbis"])
            }
            let deadline = 4.0
            try await withPipeline(scratch) { pipeline in
                try await withMediaServer(directory: media.path) { server in
                    let started = ContinuousClock.now
                    let d = await fetchOne("\(server.baseURL)/media/long.mkv", pipeline, deadline: .seconds(deadline))
                    let elapsed = (ContinuousClock.now - started).seconds
                    #expect(elapsed <= deadline + 0.25, "answered after \(elapsed) s under a \(deadline) s deadline")
                    #expect(d.status == .ready, "\(d.reason?.code.rawValue ?? "") \(d.reason?.message ?? "")")
                    #expect(d.transforms == [.transcoded, .trimmed], "\(d.transforms ?? [])")
                    #expect(d.skippedAtDeadline?.contains("transcode") == true, "\(d.skippedAtDeadline ?? [])")
                    let file = try #require(d.file)
                    let read = try await VideoTranscodeTests.streams(file)
                    let duration = try #require(Double(read["duration"] ?? ""))
                    #expect(duration > 0.5 && duration < Double(Self.clipSeconds) - 2, "\(duration) s of \(Self.clipSeconds)")
                    // A deadline this short sends the speed ladder to `ultrafast`, whose stream uses no
                    // tool past Constrained Baseline (libx264 names the profile by what it used).
                    #expect(read["v.codec_name"] == "h264" && ["High", "Main", "Constrained Baseline"].contains(read["v.profile"] ?? "")
                            && read["v.pix_fmt"] == "yuv420p", "\(read)")
                    let boxes = try AudioTranscodeTests.topLevelBoxes(file)
                    #expect((boxes.firstIndex(of: "moov") ?? .max) < (boxes.firstIndex(of: "mdat") ?? -1), "\(boxes)")
                    #expect(try await tool("/usr/bin/ffmpeg", ["-v", "error", "-xerror", "-i", file, "-f", "null", "-"]).status == 0)
                    #expect(d.thumbnail != nil, "a poster from the delivered start")
                    print("transcode budget: \(deadline) s deadline, answered at \(elapsed) s with \(duration) s of video")
                }
            }
        }

        /// With a cache, the clip the first caller's deadline cut short is not what the campaign
        /// keeps: the transcode goes on under its own budget. A caller meanwhile gets the cut
        /// clip by its deadline, with no second transcode; a caller with time gets the whole one,
        /// and so does every call after.
        @Test func theCampaignKeepsTheWholeClipMadeAfterTheFirstDeadline() async throws {
            let media = Scratch(), scratch = Scratch()
            try await offPool {
                try VideoTranscodeTests.make(media.path, "campaign.mkv", size: "1920x1080", seconds: Self.clipSeconds, audio: true,
                                             ["-r", "15", "-c:v", "mpeg4", "-q:v", "16", "-c:a", "libvorbis"])
                try writeBlackJPEG(path: "\(media.path)/fresh.jpg", width: 64, height: 48, progressive: false)
            }
            try await withPipeline(scratch, { $0.cache = ResultCaching() }) { pipeline in
                try await withMediaServer(directory: media.path) { server in
                    let url = "\(server.baseURL)/media/campaign.mkv"
                    let first = await fetchOne(url, pipeline, deadline: .seconds(4))
                    #expect(first.status == .ready && first.transforms == [.transcoded, .trimmed] && first.cache == .miss,
                            "\(first.status) \(first.transforms ?? []) \(first.reason?.message ?? "")")
                    let probesAfterFirst = pipeline.decodesStarted.probes

                    // Meanwhile: the cut clip, by this caller's own deadline, from no new transcode.
                    let started = ContinuousClock.now
                    let meanwhile = await fetchOne(url, pipeline, deadline: .seconds(2))
                    let elapsed = (ContinuousClock.now - started).seconds
                    #expect(meanwhile.status == .ready && meanwhile.transforms == [.transcoded, .trimmed] && meanwhile.cache == .hit,
                            "\(meanwhile.status) \(meanwhile.transforms ?? []) \(meanwhile.cache?.rawValue ?? "")")
                    #expect(elapsed < 2.3, "the best attempt came after \(elapsed) s under a 2 s deadline")
                    #expect(pipeline.decodesStarted.probes == probesAfterFirst, "a second transcode of the same source started")
                    #expect(pipeline.wholeClipDecodesStarted >= 1, "the whole clip runs on its own worker")
                    // Fresh work while the whole clip is made: its worker is seen beside the
                    // whole clip's (the first call's workers may have ended by its deadline).
                    let fresh = await fetchOne("\(server.baseURL)/media/fresh.jpg", pipeline)
                    #expect(fresh.status == .ready, "\(fresh.reason?.message ?? "")")
                    let niceness = Self.childNiceness()
                    #expect(niceness.contains(10) && niceness.contains(0), "the whole clip's worker below fresh work's: \(niceness)")

                    // A caller with time gets the whole clip when it is made; later calls get it from the cache.
                    let patient = await fetchOne(url, pipeline, deadline: .seconds(90))
                    #expect(patient.status == .ready && patient.transforms == [.transcoded] && patient.skippedAtDeadline == nil,
                            "\(patient.status) \(patient.transforms ?? []) \(patient.skippedAtDeadline ?? []) \(patient.reason?.message ?? "")")
                    #expect(patient.cache == .coalesced || patient.cache == .hit, "\(patient.cache?.rawValue ?? "")")
                    let file = try #require(patient.file)
                    let read = try await VideoTranscodeTests.streams(file)
                    let duration = try #require(Double(read["duration"] ?? ""))
                    #expect(abs(duration - Double(Self.clipSeconds)) < 0.5, "\(duration) s of \(Self.clipSeconds)")
                    #expect(pipeline.decodesStarted.probes == probesAfterFirst, "the whole clip was made on the campaign's worker")
                    let later = await fetchOne(url, pipeline, deadline: .seconds(2))
                    #expect(later.cache == .hit && later.transforms == [.transcoded] && later.duration == patient.duration,
                            "\(later.cache?.rawValue ?? "") \(later.transforms ?? [])")
                    print("whole clip: first \(first.duration ?? 0) s by 4 s; meanwhile \(meanwhile.duration ?? 0) s in \(elapsed) s; then \(duration) s")
                }
            }
        }

        /// The nice values of this process's children (its decoder workers), from /proc.
        static func childNiceness() -> [Int] {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            let children = tasks.flatMap { task in
                ((try? String(contentsOfFile: "/proc/self/task/\(task)/children", encoding: .utf8)) ?? "").split(separator: " ")
            }
            return children.compactMap { pid in
                // Field 19 of stat, counted after the command's closing parenthesis.
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                      let end = stat.lastIndex(of: ")") else { return nil }
                let fields = stat[stat.index(after: end)...].split(separator: " ")
                return fields.count > 16 ? Int(fields[16]) : nil
            }
        }
    }
}
