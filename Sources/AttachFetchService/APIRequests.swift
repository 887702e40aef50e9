import AttachFetch
import Foundation

/// The bodies the `/v1` routes accept, decoded with `Codable` and checked field by field so
/// that a client learns which field is wrong (`APIError.invalidRequest` naming it).
enum APIRequests {
    /// `{"requests": [{"url", "identifier"?, "clip"?: {"x","y","width","height"}, "thumbnailTime"?, "role"?}], "deadlineMs"?, "files"?}`
    /// or `{"urls": [...], "deadlineMs"?, "files"?}`.
    /// `transcoding`: the service's own, which a request's `transcode` or `transcodeMaxEdge`
    /// changes for that request alone.
    static func attachments(_ data: Data, maxRequests: Int, transcoding: TranscodeSettings? = nil) throws(APIError)
        -> (requests: [AttachmentRequest], deadlineMs: Double?, keepsFiles: Bool, encrypt: Bool?) {
        let body: AttachmentsBody
        do {
            let decoder = JSONDecoder()
            if let transcoding { decoder.userInfo[AttachmentsBody.transcodingKey] = transcoding }
            body = try decoder.decode(AttachmentsBody.self, from: data)
        } catch let error as APIError {
            throw error
        } catch {
            throw .invalidRequest("the body is not a JSON object")
        }
        guard !body.requests.isEmpty else { throw .invalidRequest("\(body.listField) must not be empty") }
        guard body.requests.count <= maxRequests else {
            throw .invalidRequest("\(body.listField): \(body.requests.count) in one call; at most \(maxRequests)")
        }
        return (body.requests, body.deadlineMs, body.keepsFiles, body.encrypt)
    }

    /// `files`: `kept` (the default: the call's own directory, as the descriptors' `file`
    /// paths) or `none` (no directory, no local paths: the verdict and the published URLs).
    static func keepsFiles(_ value: String?, field: String) throws(APIError) -> Bool {
        switch value {
        case nil, "kept": return true
        case "none": return false
        default: throw badFiles(field)
        }
    }

    /// The refusal of a `files` value that is neither `kept` nor `none` (or not a string).
    static func badFiles(_ field: String) -> APIError { .invalidRequest("\(field) must be \"kept\" or \"none\"") }

    /// A `true`/`false` query parameter; absent is false, anything else is refused.
    static func flag(_ value: String?, field: String) throws(APIError) -> Bool {
        switch value {
        case nil, "false": return false
        case "true": return true
        default: throw .invalidRequest("\(field) must be true or false")
        }
    }

    /// Whether a call's media is published encrypted: its `encrypt` when given, checked
    /// against the service's key (`--media-key-file`) and `--encrypt-media`; nil leaves it to
    /// the pipeline (everything with `--encrypt-media`, else nothing).
    static func encryption(_ asked: Bool?, configured: MediaEncryption?, field: String) throws(APIError) -> Bool? {
        guard let asked else { return nil }
        if asked && configured == nil { throw .notConfigured("\(field) needs the service to have a media key (serve --media-key-file)") }
        if !asked && configured?.encryptsEverything == true {
            throw .invalidRequest("this service publishes all media encrypted (serve --encrypt-media); \(field) false is refused")
        }
        return asked
    }

    /// The `X-Deadline-Ms` header: decimal digits with an optional fraction (`1500`, `2.5`),
    /// greater than 0, as the OpenAPI document's pattern says.
    static func deadlineHeader(_ value: String) throws(APIError) -> Double {
        let parts = value.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let digitsOnly = parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }
        guard digitsOnly, let number = Double(value), number > 0 else {
            throw .invalidRequest("X-Deadline-Ms takes milliseconds as decimal digits with an optional fraction (1500 or 2.5), greater than 0; not '\(value.prefix(40))'")
        }
        return number
    }

    /// A deadline in milliseconds: a positive number, when given.
    static func deadlineMs(_ value: Double?, field: String) throws(APIError) -> Double? {
        guard let value else { return nil }
        guard value.isFinite, value > 0 else {
            throw .invalidRequest("\(field) must be a number of milliseconds greater than 0")
        }
        return value
    }
}

/// Any key of a JSON object, so that a field nobody knows is named in the error.
private struct FieldName: CodingKey {
    let stringValue: String
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    var intValue: Int? { nil }
    init?(intValue: Int) { nil }
}

private extension KeyedDecodingContainer where Key == FieldName {
    /// The first field not in `known`, in sorted order, as an error with `message`'s wording.
    func refuseUnknown(_ known: Set<String>, _ message: (String) -> String) throws(APIError) {
        if let unknown = allKeys.map(\.stringValue).sorted().first(where: { !known.contains($0) }) {
            throw .invalidRequest(message(unknown))
        }
    }

    /// A field of type `T`, or nil when absent; any other value is `error`.
    func optional<T: Decodable>(_ type: T.Type, _ name: String, else error: @autoclosure () -> APIError) throws(APIError) -> T? {
        let key = FieldName(name)
        guard contains(key) else { return nil }
        guard let value = try? decode(T.self, forKey: key) else { throw error() }
        return value
    }
}

/// The body of `POST /v1/attachments`.
struct AttachmentsBody: Decodable {
    /// The body's fields, and each request's (the OpenAPI document's are checked against them).
    static let fields = ["requests", "urls", "deadlineMs", "files", "encrypt"]
    static let requestFields = ["url", "identifier", "clip", "thumbnailTime", "role", "transcode", "transcodeMaxEdge", "crop", "focus"]
    /// Where the decoder finds the service's `TranscodeSettings`.
    static let transcodingKey = CodingUserInfoKey(rawValue: "transcoding")!

    var requests: [AttachmentRequest] = []
    /// The field the list came in: `requests` or `urls`.
    var listField = "requests"
    var deadlineMs: Double?
    var keepsFiles = true
    var encrypt: Bool?

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: FieldName.self)
        try fields.refuseUnknown(Set(Self.fields)) {
            "unknown field '\($0)' (known: \(Self.fields.joined(separator: ", ")))"
        }
        keepsFiles = try APIRequests.keepsFiles(try fields.optional(String.self, "files", else: APIRequests.badFiles("files")),
                                                field: "files")
        encrypt = try fields.optional(Bool.self, "encrypt", else: APIError.invalidRequest("encrypt must be true or false"))
        let badDeadline = APIError.invalidRequest("deadlineMs must be a number of milliseconds greater than 0")
        deadlineMs = try APIRequests.deadlineMs(try fields.optional(Double.self, "deadlineMs", else: badDeadline), field: "deadlineMs")
        switch (fields.contains(FieldName("requests")), fields.contains(FieldName("urls"))) {
        case (true, false):
            guard var items = try? fields.nestedUnkeyedContainer(forKey: FieldName("requests")) else {
                throw APIError.invalidRequest("requests must be an array")
            }
            while !items.isAtEnd {
                let path = "requests[\(items.currentIndex)]"
                guard let item = try? items.superDecoder() else { throw APIError.invalidRequest("\(path) must be an object") }
                requests.append(try Self.request(item, at: path))
            }
        case (false, true):
            listField = "urls"
            guard var items = try? fields.nestedUnkeyedContainer(forKey: FieldName("urls")) else {
                throw APIError.invalidRequest("urls must be an array of strings")
            }
            while !items.isAtEnd {
                let index = items.currentIndex
                guard let url = try? items.decode(String.self) else { throw APIError.invalidRequest("urls[\(index)] must be a string") }
                requests.append(AttachmentRequest(url: url))
            }
        case (false, false):
            throw APIError.invalidRequest("give requests or urls")
        case (true, true):
            throw APIError.invalidRequest("give requests or urls, not both")
        }
    }

    private struct Focus: Decodable {
        var x, y: Double

        /// The two numbers and nothing else.
        init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: FieldName.self)
            try fields.refuseUnknown(["x", "y"]) { "unknown focus field '\($0)'" }
            x = try fields.decode(Double.self, forKey: FieldName("x"))
            y = try fields.decode(Double.self, forKey: FieldName("y"))
        }
    }

    private struct Clip: Decodable {
        var x, y, width, height: Double

        /// The four numbers and nothing else.
        init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: FieldName.self)
            try fields.refuseUnknown(["x", "y", "width", "height"]) { "unknown clip field '\($0)'" }
            x = try fields.decode(Double.self, forKey: FieldName("x"))
            y = try fields.decode(Double.self, forKey: FieldName("y"))
            width = try fields.decode(Double.self, forKey: FieldName("width"))
            height = try fields.decode(Double.self, forKey: FieldName("height"))
        }
    }

    private static func request(_ decoder: any Decoder, at path: String) throws(APIError) -> AttachmentRequest {
        guard let fields = try? decoder.container(keyedBy: FieldName.self) else { throw .invalidRequest("\(path) must be an object") }
        try fields.refuseUnknown(Set(requestFields)) { "\(path): unknown field '\($0)'" }
        guard let url = try fields.optional(String.self, "url", else: .invalidRequest("\(path).url must be a string")) else {
            throw .invalidRequest("\(path).url must be a string")
        }
        var request = AttachmentRequest(url: url)
        let badIdentifier = APIError.invalidRequest("\(path).identifier must be a non-empty string")
        if let identifier = try fields.optional(String.self, "identifier", else: badIdentifier) {
            guard !identifier.isEmpty else { throw badIdentifier }
            request.identifier = identifier
        }
        let badClip = APIError.invalidRequest("\(path).clip must be {\"x\", \"y\", \"width\", \"height\"} numbers, and nothing else")
        if let clip = try fields.optional(Clip.self, "clip", else: badClip) {
            do {
                request.clip = try ClippingRectangle.clipped(x: clip.x, y: clip.y, width: clip.width, height: clip.height)
            } catch {
                throw .invalidRequest("\(path).clip: \(error.message)")
            }
        }
        let badTime = APIError.invalidRequest("\(path).thumbnailTime must be a number of seconds, 0 or more")
        if let seconds = try fields.optional(Double.self, "thumbnailTime", else: badTime) {
            guard seconds.isFinite, seconds >= 0 else { throw badTime }
            request.options = AttachmentOptions(thumbnailTime: seconds)
        }
        let badTranscode = APIError.invalidRequest("\(path).transcode must be true or false")
        let badEdge = APIError.invalidRequest("\(path).transcodeMaxEdge must be a whole number of pixels from \(TranscodeSettings.longEdgesText)")
        let transcode = try fields.optional(Bool.self, "transcode", else: badTranscode)
        let edge = try fields.optional(Int.self, "transcodeMaxEdge", else: badEdge)
        if transcode != nil || edge != nil {
            let service = decoder.userInfo[transcodingKey] as? TranscodeSettings
            do {
                request.transcoding = try TranscodeSettings(enabled: transcode ?? service?.enabled ?? true,
                                                            maxLongEdge: edge ?? service?.maxLongEdge ?? 1280)
            } catch {
                throw badEdge
            }
        }
        let badCrop = APIError.invalidRequest("\(path).crop must be one of \(CropMode.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))")
        if let crop = try fields.optional(String.self, "crop", else: badCrop) {
            guard let mode = CropMode(rawValue: crop) else { throw badCrop }
            request.crop = mode
        }
        let badFocus = APIError.invalidRequest("\(path).focus must be {\"x\", \"y\"} numbers from 0 to 1, and nothing else")
        if let focus = try fields.optional(Focus.self, "focus", else: badFocus) {
            do { request.focus = try FocusPoint(x: focus.x, y: focus.y) } catch { throw badFocus }
        }
        let badRole = APIError.invalidRequest("\(path).role must be \"attachment\" or \"avatar\"")
        if let role = try fields.optional(String.self, "role", else: badRole) {
            guard let parsed = AttachmentDescriptor.Role(rawValue: role) else { throw badRole }
            request.role = parsed
        }
        return request
    }
}
