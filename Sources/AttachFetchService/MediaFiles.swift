import AttachFetch
import AttachFetchRuntime
import Foundation
import HTTPTypes
import Hummingbird
#if canImport(Glibc)
import Glibc
#endif

/// `GET`/`HEAD /media/<name>`: the publish directory's files. Only names the publisher makes
/// (`<64 hex>.<ext>`, no slash, no dot-dot, nothing encoded) are looked up, opened without
/// following symbolic links, and served only when they are regular files: nothing outside the
/// directory is reachable. Content-addressed, so immutable: a strong ETag (the hash) and a
/// year-long public Cache-Control. Single byte ranges are honoured.
///
/// Why not Hummingbird's `FileMiddleware` (2.28): its `LocalFileSystem` looks a file up by path
/// and follows symbolic links (a link placed in the publish directory would be served), checks
/// the file's attributes and opens it again by path later (a file swapped in between is what
/// gets served), derives its ETag from size and modification time rather than the content's
/// SHA-256 that names the file, and compares `If-None-Match` with one tag only (no list, no
/// `*`). Here the one descriptor opened with `O_NOFOLLOW` is checked and then read.
struct MediaFiles: Sendable {
    let directory: String

    func respond(name: String, request: Request) throws(APIError) -> Response {
        guard Publisher.isPublishedName(name), !name.contains("/"),
              name.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7a) || $0 == 0x2e }) else {
            throw APIError.notFound("/media/\(name)")
        }
        let descriptor = open("\(directory)/\(name)", O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw APIError.notFound("/media/\(name)") }
        return try Self.respond(opened: descriptor, name: name, path: "/media/\(name)", request: request,
                                cacheControl: "public, max-age=31536000, immutable", etag: "\"\(name.prefix(64))\"")
    }

    /// Serves a file already opened (without following links) if it is a regular file; the
    /// descriptor is closed when the response is done. `path` names it in a 404.
    static func respond(opened descriptor: Int32, name: String, path: String, request: Request,
                        cacheControl: String, etag: String?) throws(APIError) -> Response {
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { throw APIError.notFound(path) }
        let size = Int(status.st_size)
        var headers: HTTPFields = [
            .contentType: Self.contentType(name),
            .cacheControl: cacheControl,
            .acceptRanges: "bytes",
        ]
        if let etag {
            headers[.eTag] = etag
            if let header = request.headers[.ifNoneMatch], Self.matches(header, etag: etag) {
                return Response(status: .notModified, headers: headers)
            }
        }
        var range = 0..<size
        var status206 = false
        switch request.headers[.range].map({ Self.byteRange($0, size: size) }) {
        case nil, .ignored?:
            break
        case .unsatisfiable?:
            headers[.contentRange] = "bytes */\(size)"
            return Response(status: .rangeNotSatisfiable, headers: headers)
        case .bytes(let asked)?:
            range = asked
            status206 = true
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)"
        }
        headers[.contentLength] = String(range.count)
        if request.method == .head {
            return Response(status: status206 ? .partialContent : .ok, headers: headers)
        }
        return Response(status: status206 ? .partialContent : .ok, headers: headers,
                        body: Self.streamed(handle, range: range))
    }

    /// Reads of the open file happen a chunk at a time, never on Swift's cooperative pool; a
    /// 50 MB video costs one chunk of memory, not 50 MB.
    static let chunkBytes = 256 * 1024

    /// The body: `range` of the already opened (and checked) file, in chunks. The handle is
    /// the one opened with O_NOFOLLOW, so nothing can swap the file between check and read.
    private static func streamed(_ handle: FileHandle, range: Range<Int>) -> ResponseBody {
        ResponseBody(contentLength: range.count) { writer in
            var offset = range.lowerBound
            while offset < range.upperBound {
                let count = min(chunkBytes, range.upperBound - offset)
                let chunk: ByteBuffer = try await BlockingWork.run { [offset] in
                    var buffer = ByteBuffer()
                    let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { bytes in
                        max(0, pread(handle.fileDescriptor, bytes.baseAddress, count, off_t(offset)))
                    }
                    if read == 0 { throw APIError(status: .internalServerError, code: "ioError", message: "the file ended early") }
                    return buffer
                }
                try await writer.write(chunk)
                offset += chunk.readableBytes
            }
            try await writer.finish(nil)
        }
    }

    /// What a `Range` header asks of a file of `size` bytes.
    enum RangeAnswer: Equatable {
        /// One satisfiable range: 206 with these bytes.
        case bytes(Range<Int>)
        /// One well-formed range that starts past the end (or a zero suffix): 416.
        case unsatisfiable
        /// Not one `bytes` range (another unit, several ranges, a malformed one): the whole file,
        /// 200, as RFC 9110 lets a server do with ranges it does not support.
        case ignored
    }

    /// One range of `bytes=a-b`, `bytes=a-` or `bytes=-n`.
    static func byteRange(_ header: String, size: Int) -> RangeAnswer {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return .ignored }
        let spec = header.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2 else { return .ignored }
        if spec[0].isEmpty {
            guard let suffix = Int(spec[1]), suffix >= 0 else { return .ignored }
            return suffix > 0 && size > 0 ? .bytes(max(0, size - suffix)..<size) : .unsatisfiable
        }
        guard let start = Int(spec[0]), start >= 0 else { return .ignored }
        var end = size - 1
        if !spec[1].isEmpty {
            guard let last = Int(spec[1]), last >= start else { return .ignored }
            end = min(last, end)
        }
        return start < size ? .bytes(start..<(end + 1)) : .unsatisfiable
    }

    /// `If-None-Match`: `*`, or a list of entity tags one of which is ours (weak comparison, as
    /// RFC 9110 asks for this header).
    static func matches(_ header: String, etag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }

    static func contentType(_ name: String) -> String {
        let ext = (name as NSString).pathExtension.lowercased()
        return MediaType.all.first { $0.fileExtension == ext }?.mimeType ?? "application/octet-stream"
    }
}
