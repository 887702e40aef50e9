internal import CFFmpeg

extension MediaProber {
    /// The probe's one pass over the packets: it decodes the sound until a frame comes out (so
    /// that a stream which does not decode is told), and the picture up to the poster, which is
    /// the frame at the time asked for or, with none asked, the most telling of the first
    /// seconds (`PosterSearch`), within the packet and frame budgets. Its state is what the
    /// pass reads and writes as it goes; the probe judges the streams from it afterwards.
    struct ProbeDecode {
        let video: AVDecoder?, audio: AVDecoder?
        /// Nil: the poster is searched for; otherwise the time whose frame it is.
        let thumbnailTime: Double?
        /// The time the decode runs up to: the asked time within the duration.
        let target: Double
        let maxDecodedFrames: Int
        private let frame: AVFrameBox
        /// The frame chosen so far; its width is 0 until one is.
        let poster: AVFrameBox
        private(set) var posterSeconds: Double?
        private var search = PosterSearch()
        private(set) var videoDone: Bool
        private(set) var audioDecoded: Bool
        private var decodedFrames = 0
        /// FFmpeg's last error on the way, for the message of a stream that does not decode.
        private(set) var lastError: Int32 = 0

        init(video: AVDecoder?, audio: AVDecoder?, thumbnailTime: Double?, target: Double, maxDecodedFrames: Int) throws(Reason) {
            (self.video, self.audio, self.thumbnailTime, self.target) = (video, audio, thumbnailTime, target)
            self.maxDecodedFrames = maxDecodedFrames
            (frame, poster) = (try AVFrameBox(), try AVFrameBox())
            (videoDone, audioDecoded) = (video == nil, audio == nil)
        }

        var hasPoster: Bool { poster.pointer.pointee.width > 0 }

        /// Reads packets until both streams are done, the file ends, or `maxPackets` are read;
        /// then flushes what the decoders still hold. Encrypted samples end it with
        /// `encryptedMedia`.
        mutating func run(_ input: AVInput, maxPackets: Int, shouldStop: () -> Bool) throws(Reason) {
            let packet = try AVPacketBox()
            var packets = 0
            while !(videoDone && audioDecoded) && packets < maxPackets {
                if shouldStop() { throw Reason(code: .cancelled, message: "abandoned") }
                let status = av_read_frame(input.context, packet.pointer)
                if status < 0 {
                    if status != FFmpeg.endOfFile { lastError = status }
                    break
                }
                defer { av_packet_unref(packet.pointer) }
                packets += 1
                // Samples carrying CENC encryption info (senc/tenc) are ciphertext.
                if packet.isEncrypted,
                   let stream = input.streams.first(where: { $0.pointee.index == packet.pointer.pointee.stream_index }) {
                    throw encryptedMedia(stream)
                }
                for decoder in [video, audio].compactMap({ $0 }) where decoder.stream.pointee.index == packet.pointer.pointee.stream_index {
                    if decoder === video, thumbnailTime == nil {
                        let skips = search.skipsFrame(at: packetSeconds(packet.pointer, stream: decoder.stream), hasPoster: hasPoster)
                        decoder.context.pointee.skip_frame = skips ? AVDISCARD_NONREF : AVDISCARD_DEFAULT
                    }
                    let sent = avcodec_send_packet(decoder.context, packet.pointer)
                    if sent < 0 { lastError = sent }
                    drain(decoder)
                }
            }
            // The end of the file (or of the budget): flush what the decoders still hold.
            for decoder in [video, audio].compactMap({ $0 }) where !(decoder === video ? videoDone : audioDecoded) {
                avcodec_send_packet(decoder.context, nil)
                drain(decoder)
            }
        }

        /// Takes every frame the decoder has ready; for video, keeps the latest as the poster.
        private mutating func drain(_ decoder: AVDecoder) {
            while avcodec_receive_frame(decoder.context, frame.pointer) >= 0 {
                defer { av_frame_unref(frame.pointer) }
                if decoder === audio {
                    audioDecoded = true
                    continue
                }
                guard !videoDone else { continue }
                decodedFrames += 1
                let seconds = frameSeconds(frame.pointer, stream: decoder.stream)
                if thumbnailTime == nil {
                    // Auto (PosterChoice.swift): the most telling candidate of the first seconds.
                    let scoreable = lumaFormat(frame.pointer) != nil
                    if search.takes(frame.pointer, at: seconds, isFirst: !hasPoster) {
                        take(at: seconds)
                    }
                    if search.isOver(at: seconds, scoreable: scoreable) || decodedFrames >= maxDecodedFrames { videoDone = true }
                    continue
                }
                take(at: seconds)
                // Half a frame early counts: frame times rarely land exactly on the target.
                if (seconds ?? target) >= target - 0.02 || decodedFrames >= maxDecodedFrames { videoDone = true }
            }
        }

        /// The frame just decoded becomes the poster.
        private mutating func take(at seconds: Double?) {
            av_frame_unref(poster.pointer)
            av_frame_move_ref(poster.pointer, frame.pointer)
            posterSeconds = seconds
        }
    }
}
