import AttachFetchCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How jobs and answers travel on a decoder worker's socket. Thumbnail jobs and their answers
/// (nearly every job of an image-heavy load) go as a few fixed fields in binary: encoding and
/// decoding them as JSON took about a tenth of all CPU in a run of 200 small images through the
/// workers, most of what isolation then cost. Every other job and answer goes as JSON (rare,
/// and far more work each). The first byte says which.
package enum JobWire {
    private static let json: UInt8 = 0, thumbnail: UInt8 = 1, failure: UInt8 = 2

    // MARK: Numbered frames

    /// What goes on the socket: a job, or an answer, after its number on that worker (32 bits,
    /// little-endian). The keeper numbers each job it sends and the worker carries the number
    /// back before its answer, so an answer a worker sends again for an earlier job is known as
    /// such and never read as the current job's (`DecoderProcess.run`).
    package static func encode(_ job: DecodeJob, number: UInt32) -> Data? { encode(job).map { numbered($0, number) } }

    package static func decodeJob(numbered data: Data) -> (job: DecodeJob, number: UInt32)? {
        guard let number = number(of: data), let job = decodeJob(data.dropFirst(4)) else { return nil }
        return (job, number)
    }

    package static func encode(_ answer: DecodeAnswer, number: UInt32) -> Data? { encode(answer).map { numbered($0, number) } }

    package static func decodeAnswer(numbered data: Data) -> (answer: DecodeAnswer, number: UInt32)? {
        guard let number = number(of: data), let answer = decodeAnswer(data.dropFirst(4)) else { return nil }
        return (answer, number)
    }

    /// The number a frame starts with; nil for a frame shorter than one.
    package static func number(of data: Data) -> UInt32? {
        guard data.count >= 4 else { return nil }
        return data.prefix(4).reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    private static func numbered(_ body: Data, _ number: UInt32) -> Data {
        withUnsafeBytes(of: number.littleEndian) { Data($0) } + body
    }

    // MARK: Bodies

    package static func encode(_ job: DecodeJob) -> Data? {
        guard case .thumbnail(let source, let destinationBase, let shape, let limits) = job else {
            return (try? JSONWriter.data(job)).map { Data([json]) + $0 }
        }
        var out = Writer(tag: thumbnail)
        out.string(source)
        out.string(destinationBase)
        switch shape {
        case .squareCenter:
            out.byte(0)
        case .clip(let rectangle):
            out.byte(1)
            [rectangle.x, rectangle.y, rectangle.width, rectangle.height].forEach { out.double($0) }
        }
        [limits.maxEdge, limits.maxPixels, limits.maxProgressivePixels, limits.maxAnimationFrames,
         limits.maxAnimationPixels].forEach { out.integer($0) }
        out.crop(limits.suggestClip)
        return out.data
    }

    package static func decodeJob(_ data: Data) -> DecodeJob? {
        var input = Reader(data)
        switch input.byte() {
        case json: return try? JSONDecoder().decode(DecodeJob.self, from: data.dropFirst())
        case thumbnail:
            guard let source = input.string(), let destinationBase = input.string(), let kind = input.byte() else { return nil }
            let shape: ThumbnailShape
            switch kind {
            case 0: shape = .squareCenter
            case 1:
                guard let rectangle = input.rectangleFields() else { return nil }
                shape = .clip(rectangle)
            default: return nil
            }
            guard let maxEdge = input.integer(), let maxPixels = input.integer(), let maxProgressive = input.integer(),
                  let maxFrames = input.integer(), let maxAnimationPixels = input.integer(), let crop = input.crop(), input.isAtEnd else { return nil }
            var limits = ThumbnailLimits(maxEdge: maxEdge, maxPixels: maxPixels, maxProgressivePixels: maxProgressive,
                                            maxAnimationFrames: maxFrames, maxAnimationPixels: maxAnimationPixels)
            limits.suggestClip = crop
            return .thumbnail(source: source, destinationBase: destinationBase, shape: shape, limits: limits)
        default: return nil
        }
    }

    package static func encode(_ answer: DecodeAnswer) -> Data? {
        let others = answer.normalized == nil && answer.probed == nil && answer.remuxed == nil
        if others, answer.failure == nil, let made = answer.thumbnail {
            var out = Writer(tag: thumbnail)
            [made.sourceWidth, made.sourceHeight, made.width, made.height].forEach { out.integer($0) }
            out.string(made.file)
            if let time = made.time {
                out.byte(1)
                out.double(time)
            } else {
                out.byte(0)
            }
            if let bytes = made.bytes {
                out.byte(1)
                out.integer(Int(bytes))
            } else {
                out.byte(0)
            }
            out.rectangle(made.suggestedClip)
            out.byte(Self.flags(of: made))
            return out.data
        }
        if others, answer.thumbnail == nil, let problem = answer.failure {
            var out = Writer(tag: failure)
            out.string(problem.code.rawValue)
            out.string(problem.message)
            return out.data
        }
        return (try? JSONWriter.data(answer)).map { Data([json]) + $0 }
    }

    package static func decodeAnswer(_ data: Data) -> DecodeAnswer? {
        var input = Reader(data)
        switch input.byte() {
        case json: return try? JSONDecoder().decode(DecodeAnswer.self, from: data.dropFirst())
        case thumbnail:
            guard let sourceWidth = input.integer(), let sourceHeight = input.integer(), let width = input.integer(),
                  let height = input.integer(), let file = input.string(), let hasTime = input.byte() else { return nil }
            let time = hasTime == 1 ? input.double() : nil
            guard hasTime == 0 || time != nil, let hasBytes = input.byte() else { return nil }
            let bytes = hasBytes == 1 ? input.integer() : nil
            guard hasBytes == 0 || bytes != nil, let suggested = input.rectangle(), let flags = input.byte(), input.isAtEnd else { return nil }
            var made = ThumbnailOutcome(sourceWidth: sourceWidth, sourceHeight: sourceHeight, file: file,
                                        width: width, height: height, time: time, bytes: bytes.map(Int64.init))
            made.suggestedClip = suggested
            guard Self.read(flags, into: &made) else { return nil }
            return DecodeAnswer(.success(made), \.thumbnail)
        case failure:
            guard let code = input.string(), let message = input.string(), input.isAtEnd else { return nil }
            return DecodeAnswer(failure: Reason(code: ReasonCode(rawValue: code), message: message))
        default: return nil
        }
    }

    /// A thumbnail answer's last byte: the source's EXIF orientation in the low four bits (0
    /// for 1 or none), 0x10 when it carries an ICC profile, 0x20 when its EXIF blocks disagree.
    private static func flags(of made: ThumbnailOutcome) -> UInt8 {
        UInt8(made.orientation.map { (2...8).contains($0) ? $0 : 0 } ?? 0) | (made.hasColourProfile == true ? 0x10 : 0)
            | (made.orientationsDisagree == true ? 0x20 : 0)
    }

    /// What `flags(of:)` wrote, into `made`; false for bits it never writes.
    private static func read(_ flags: UInt8, into made: inout ThumbnailOutcome) -> Bool {
        let orientation = Int(flags & 0x0F)
        guard flags & ~0x3F == 0, orientation == 0 || (2...8).contains(orientation) else { return false }
        made.orientation = orientation == 0 ? nil : orientation
        made.hasColourProfile = flags & 0x10 != 0 ? true : nil
        made.orientationsDisagree = flags & 0x20 != 0 ? true : nil
        return true
    }

    /// Little-endian fixed-size numbers; strings as a 32-bit length and UTF-8.
    private struct Writer {
        var data: Data
        init(tag: UInt8) { data = Data([tag]) }
        mutating func byte(_ value: UInt8) { data.append(value) }
        mutating func integer(_ value: Int) { withUnsafeBytes(of: Int64(value).littleEndian) { data.append(contentsOf: $0) } }
        mutating func double(_ value: Double) { withUnsafeBytes(of: value.bitPattern.littleEndian) { data.append(contentsOf: $0) } }
        mutating func string(_ value: String) {
            let bytes = Array(value.utf8)
            withUnsafeBytes(of: UInt32(bytes.count).littleEndian) { data.append(contentsOf: $0) }
            data.append(contentsOf: bytes)
        }
        /// 0 for none; 1, the mode's index, then 0, or 1 and the focal point.
        mutating func crop(_ crop: PictureCrop?) {
            guard let crop else { return byte(0) }
            byte(1)
            byte(UInt8(CropMode.allCases.firstIndex(of: crop.mode) ?? 0))
            guard let focus = crop.focus else { return byte(0) }
            byte(1)
            double(focus.x)
            double(focus.y)
        }
        /// 0 for none; 1 and the four numbers.
        mutating func rectangle(_ rectangle: ClippingRectangle?) {
            guard let rectangle else { return byte(0) }
            byte(1)
            [rectangle.x, rectangle.y, rectangle.width, rectangle.height].forEach { double($0) }
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0
        init(_ data: Data) { bytes = [UInt8](data) }
        var isAtEnd: Bool { offset == bytes.count }

        /// What `Writer.crop` wrote: .some(nil) for none, nil when malformed.
        mutating func crop() -> PictureCrop?? {
            switch byte() {
            case 0: return .some(nil)
            case 1:
                guard let index = byte(), Int(index) < CropMode.allCases.count, let hasFocus = byte() else { return nil }
                let mode = CropMode.allCases[Int(index)]
                guard hasFocus == 1 else { return hasFocus == 0 ? .some(PictureCrop(mode: mode)) : nil }
                guard let x = double(), let y = double(), let focus = try? FocusPoint(x: x, y: y) else { return nil }
                return .some(PictureCrop(mode: mode, focus: focus))
            default: return nil
            }
        }

        /// Four numbers that make a rectangle in the unit square, or nil.
        mutating func rectangleFields() -> ClippingRectangle? {
            guard let x = double(), let y = double(), let width = double(), let height = double() else { return nil }
            return try? ClippingRectangle(x: x, y: y, width: width, height: height)
        }

        /// What `Writer.rectangle` wrote: .some(nil) for none, nil when malformed.
        mutating func rectangle() -> ClippingRectangle?? {
            switch byte() {
            case 0: return .some(nil)
            case 1:
                guard let rectangle = rectangleFields() else { return nil }
                return .some(rectangle)
            default: return nil
            }
        }

        mutating func byte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        private mutating func word(_ count: Int) -> UInt64? {
            guard bytes.count - offset >= count else { return nil }
            var value: UInt64 = 0
            for index in 0..<count { value |= UInt64(bytes[offset + index]) << (8 * index) }
            offset += count
            return value
        }

        mutating func integer() -> Int? { word(8).map { Int(Int64(bitPattern: $0)) } }
        mutating func double() -> Double? { word(8).map { Double(bitPattern: $0) } }
        mutating func string() -> String? {
            guard let length = word(4).map(Int.init), bytes.count - offset >= length else { return nil }
            defer { offset += length }
            return String(decoding: bytes[offset..<offset + length], as: UTF8.self)
        }
    }
}
