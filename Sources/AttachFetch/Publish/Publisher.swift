import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where ready files are published for devices to fetch: a directory that a web server or
/// CDN serves at `baseURL`.
public struct Publishing: Sendable, Equatable {
    /// Must exist and be writable; it is never created, and nothing in it is ever replaced.
    public var directory: String
    /// The public http(s) URL the directory is served at, e.g. `https://media.example.com/push`.
    public var baseURL: String

    /// Publishes into `directory`, served at `baseURL`; checked when the pipeline is made.
    public init(directory: String, baseURL: String) {
        self.directory = directory
        self.baseURL = baseURL
    }

    /// A configuration error unless the directory is a writable directory and the base URL is http(s).
    func validate() throws(AttachFetchError) {
        var status = stat()
        guard stat(directory, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
            throw .invalidConfiguration("the publish directory \(directory) does not exist or is not a directory")
        }
        guard access(directory, W_OK | X_OK) == 0 else {
            throw .invalidConfiguration("the publish directory \(directory) is not writable: \(String(cString: strerror(errno)))")
        }
        let scheme = baseURL.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() }
        guard scheme == "http" || scheme == "https", URLCheck.problem(with: baseURL) == nil else {
            throw .invalidConfiguration("the public base URL must be an http:// or https:// URL, not '\(baseURL)'")
        }
    }

    /// The public URL of a published file.
    func url(of name: String) -> String {
        (baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL) + "/" + name
    }
}

/// Stores files content-addressed (`<sha256>.<extension>`) in a publish directory: each name
/// is written once, completely (a temporary file linked into place, which never replaces), so
/// readers and other processes publishing at the same time only ever see whole files. Files
/// are 0644: they are meant to be public. Publishing never deletes; `prune` does, by age.
/// Blocking file I/O: call it from a worker thread.
public enum Publisher {
    /// Temporary files start with this; `prune` removes old ones left by a process that died.
    static let temporaryPrefix = ".publishing-"

    /// Publishes `source` as `<sha256>.<suffix>` and returns that name. `sha256` is the
    /// file's when known (else it is computed). Content already published is not written
    /// again; its modification time is renewed, so that `prune` keeps what is still in use.
    static func publish(_ source: String, sha256: String?, suffix: String, into directory: String) throws(Reason) -> String {
        let digest: String
        if let sha256 { digest = sha256 } else { digest = try hash(source) }
        let name = "\(digest).\(suffix)"
        let final = "\(directory)/\(name)"
        if isRegularFile(final) {
            utimensat(AT_FDCWD, final, nil, 0)
            return name
        }
        let temporary = "\(directory)/\(temporaryPrefix)\(digest.prefix(16))-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        do throws(Reason) {
            try SafeFile.copy(source, to: temporary, mode: 0o644)
        } catch {
            unlink(temporary)
            throw error
        }
        defer { unlink(temporary) }
        // link(2) never replaces: a process that published the same content first wins, and
        // its file has the same bytes.
        if link(temporary, final) != 0 {
            let error = errno
            // EEXIST is fine only when what is there is a published file (same name, same bytes).
            guard error == EEXIST, isRegularFile(final) else {
                throw Reason(code: .ioError, message: error == EEXIST
                    ? "cannot publish \(final): something that is not a regular file is in its place"
                    : "cannot publish \(final): \(String(cString: strerror(error)))")
            }
        }
        return name
    }

    /// What `prune` removed.
    public struct PruneResult: Sendable, Equatable {
        /// Files removed.
        public var files: Int
        /// Bytes those files held.
        public var bytes: Int64
    }

    /// Removes the published files (and leftover temporary files) in `directory` not modified
    /// for `age`. Other files are never touched, nor anything that is not a regular file.
    public static func prune(directory: String, olderThan age: Duration) throws(AttachFetchError) -> PruneResult {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
            throw .outputDirectory("cannot read the publish directory \(directory)")
        }
        let cutoff = Date().timeIntervalSince1970 - Double(age.components.seconds)
        var result = PruneResult(files: 0, bytes: 0)
        for name in names where isPublishedName(name) || name.hasPrefix(temporaryPrefix) {
            let path = "\(directory)/\(name)"
            var status = stat()
            guard lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG,
                  Double(status.st_mtim.tv_sec) < cutoff else { continue }
            if unlink(path) == 0 {
                result.files += 1
                result.bytes += Int64(status.st_size)
            }
        }
        return result
    }

    /// `<64 hex digits>.<suffix>`: the names `publish` makes.
    public static func isPublishedName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard bytes.count > 65, bytes[64] == UInt8(ascii: ".") else { return false }
        return bytes.prefix(64).allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    private static func isRegularFile(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
    }

    static func hash(_ path: String) throws(Reason) -> String {
        let digest = SHA256Digest()
        try SafeFile.eachChunk(of: path) { digest.update($0) }
        return try digest.finalizeHex()
    }
}
