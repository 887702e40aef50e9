import Foundation
import Logging

/// The result cache that replicas share through the object store, and the leases that elect
/// one fetcher per URL among them. The store is the only state replicas share:
///
/// - `PREFIX/results/<name>.json` holds a finished result: its descriptor, the keys of its
///   published objects, its HTTP validators and until when it is fresh (wall-clock time, the
///   only clock replicas share). Written only for results the local cache would keep.
/// - `PREFIX/leases/<name>` is created with `If-None-Match: *` by the replica that fetches; the
///   others wait for the result. It holds its holder and its expiry, the holder's deadline: a
///   holder that died is taken over after that, through `leases/<name>~<holder>`, which only
///   one replica can create.
///
/// `<name>` is the SHA-256 of the URL, the request's output options and the pipeline's
/// settings that change a result.
struct StoreResults: Sendable {
    let store: ObjectStore
    /// The pipeline settings that change a result (and the public base of its URLs).
    let settings: String
    /// This process, as leases name it.
    let holder: String
    let logger: Logger

    init(store: ObjectStore, configuration: AttachFetchConfiguration, logger: Logger) {
        self.store = store
        self.logger = logger
        let limits = configuration.sizeLimits
        settings = [
            "thumbnail=\(configuration.thumbnailMaxEdge)", "normalize=\(configuration.normalize)",
            "limits=\(limits.image),\(limits.audio),\(limits.video),\(limits.imageSource)",
            "pixels=\(configuration.maxImagePixels)", "frames=\(configuration.maxAnimationFrames)",
            "base=\(store.target.baseURL)",
        ].joined(separator: ";")
        var hostname = [CChar](repeating: 0, count: 256)
        gethostname(&hostname, hostname.count - 1)
        holder = "\(String(nulTerminated: hostname)):\(getpid()):\(UInt32.random(in: 0...UInt32.max))"
    }

    /// What a result object holds.
    struct Record: Codable, Sendable {
        var version = 1
        var descriptor: AttachmentDescriptor
        /// Keys of the published objects: the delivered file, the thumbnail, each variant.
        var file: String?
        var thumbnail: String?
        var variants: [String: String]
        var headers: CacheHeaders
        /// Seconds since 1970.
        var storedAt: Double
        var freshUntil: Double
        /// A clip the deadline cut short, stored while its replica makes the whole one
        /// (`ResultCaching.wholeClipBudget`); absent otherwise.
        var provisional: Bool?

        /// Whether it is fresh at `wall` (seconds since 1970).
        func isFresh(at wall: Double) -> Bool { freshUntil > wall }
        /// How long it stays fresh after `wall`.
        func remaining(at wall: Double) -> Duration { .milliseconds(max(0, Int((freshUntil - wall) * 1000))) }
    }

    struct Lease: Codable, Sendable {
        var holder: String
        /// Seconds since 1970.
        var expires: Double
    }

    /// The name of `key`'s result and lease, the same on every replica with the same settings;
    /// nil only when OpenSSL cannot hash (the result is then not shared).
    func name(for key: ResultKey) -> String? {
        let clip = key.clip.map { $0.map { "\($0)" }.joined(separator: ",") } ?? "-"
        var text = [key.url, clip, key.thumbnailTime.map { "\($0)" } ?? "-", key.role?.rawValue ?? "-",
                    key.platforms.map(\.rawValue).joined(separator: ","), settings].joined(separator: "\n")
        if key.encrypted { text += "\nencrypted" }
        if let transcoding = key.transcoding { text += "\ntranscode=\(transcoding.enabled),\(transcoding.maxLongEdge)" }
        let crop: String = key.crop.map { crop in crop.mode.rawValue + (crop.focus.map { ",focus=\($0.x),\($0.y)" } ?? "") } ?? "none"
        text += "\ncrop=" + crop
        return try? SHA256Digest.hex(of: Array(text.utf8))
    }

    private func resultKey(_ name: String) -> String { store.target.key("results/\(name).json") }
    private func leaseKey(_ name: String) -> String { store.target.key("leases/\(name)") }

    /// The stored result, or nil (none, unreadable, or the store failing: the origin is asked).
    func read(_ name: String, deadline: ContinuousClock.Instant) async -> Record? {
        do throws(ObjectStoreError) {
            guard let bytes = try await store.get(resultKey(name), deadline: deadline) else { return nil }
            return try? JSONDecoder().decode(Record.self, from: Data(bytes))
        } catch {
            logger.debug("shared result not read", metadata: ["problem": "\(error.description)"])
            return nil
        }
    }

    /// Stores a finished result for other replicas; a failure only costs them a fetch.
    func write(_ record: Record, name: String, deadline: ContinuousClock.Instant) async {
        do throws(ObjectStoreError) {
            _ = try await putJSON(record, key: resultKey(name), onlyIfAbsent: false, deadline: deadline)
        } catch {
            logger.debug("shared result not written", metadata: ["problem": "\(error.description)"])
        }
    }

    enum LeaseAnswer: Sendable {
        case acquired
        /// Another replica holds it until `expires` (seconds since 1970).
        case held(Lease)
        /// The store did not answer: go ahead without one (a store that fails must not stop fetching).
        case unavailable
    }

    /// Wall time by the pipeline's clock (seconds since 1970): what stored freshness and
    /// leases, which replicas share, are measured in.
    var wallNow: Double { store.clock.wallSeconds }

    /// Tries to become the one fetcher of `name` until `expires`; takes over a lease that expired.
    func acquireLease(_ name: String, expires: Double, deadline: ContinuousClock.Instant) async -> LeaseAnswer {
        let lease = Lease(holder: holder, expires: expires)
        do throws(ObjectStoreError) {
            if try await putLease(leaseKey(name), lease, onlyIfAbsent: true, deadline: deadline) { return .acquired }
            guard let bytes = try await store.get(leaseKey(name), deadline: deadline),
                  let current = try? JSONDecoder().decode(Lease.self, from: Data(bytes)) else {
                // Released between the two calls: try once more.
                return try await putLease(leaseKey(name), lease, onlyIfAbsent: true, deadline: deadline) ? .acquired
                    : .held(Lease(holder: "", expires: wallNow + 1))
            }
            guard current.expires <= wallNow else { return .held(current) }
            // Expired: of all the replicas that saw it so, one creates the takeover object.
            let takeover = leaseKey("\(name)~\(current.holder.filter { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" })-\(Int(current.expires))")
            guard try await putLease(takeover, lease, onlyIfAbsent: true, deadline: deadline) else { return .held(current) }
            _ = try await putLease(leaseKey(name), lease, onlyIfAbsent: false, deadline: deadline)
            logger.debug("expired lease taken over", metadata: ["name": "\(name)"])
            return .acquired
        } catch {
            logger.debug("lease not taken", metadata: ["problem": "\(error.description)"])
            return error.endedByCaller ? .held(lease) : .unavailable
        }
    }

    /// Moves the lease's expiry on while its work runs (a campaign's whole clip); false when the
    /// store did not take it.
    func renewLease(_ name: String, expires: Double, deadline: ContinuousClock.Instant) async -> Bool {
        do throws(ObjectStoreError) {
            return try await putLease(leaseKey(name), Lease(holder: holder, expires: expires), onlyIfAbsent: false, deadline: deadline)
        } catch {
            logger.debug("lease not renewed", metadata: ["problem": "\(error.description)"])
            return false
        }
    }

    /// How far a renewal moves a lease's expiry, in seconds; it is renewed every third of that.
    static let renewedLeaseSeconds = 30.0

    /// How long another replica's provisional result is used before the store is asked again.
    static let provisionalReuse: Duration = .seconds(10)

    /// Gives the lease back, so that a result that was not stored is fetched by the next caller
    /// at once. The work ends only once its lease is given back (the pipeline's shutdown waits
    /// for that before it stops the store's requests); the lease's expiry covers a store that
    /// does not answer.
    func releaseLease(_ name: String) async {
        let store = self.store, key = leaseKey(name)
        do throws(ObjectStoreError) {
            try await Self.uncut { () async throws(ObjectStoreError) in
                try await store.delete(key, deadline: store.clock.now + Self.leaseGrace)
            }
        } catch {
            logger.debug("lease not released", metadata: ["problem": "\(error.description)"])
        }
    }

    /// Writes a lease (or a takeover object) and learns whether the store took it, even when
    /// the caller is cancelled meanwhile (`uncut`), with `leaseGrace` after the caller's
    /// deadline. A takeover object written without its lease would make every replica wait
    /// for a holder that never comes; a lease taken for a cancelled caller is given back by
    /// the work, as any other.
    private func putLease(_ key: String, _ lease: Lease, onlyIfAbsent: Bool, deadline: ContinuousClock.Instant) async throws(ObjectStoreError) -> Bool {
        let own = deadline + Self.leaseGrace
        return try await Self.uncut { () async throws(ObjectStoreError) in
            try await self.putJSON(lease, key: key, onlyIfAbsent: onlyIfAbsent, deadline: own)
        }
    }

    /// Runs a lease request in a task of its own and awaits it. The caller's cancellation (its
    /// deadline firing, even while the request is on its way) must not cut it: a request cut
    /// short may still have reached the store, and a replica that holds a lease without
    /// knowing it leaves it standing until its expiry. The request's own deadline bounds it.
    private static func uncut<T: Sendable>(_ request: @escaping @Sendable () async throws(ObjectStoreError) -> T) async throws(ObjectStoreError) -> T {
        let task = Task.detached { () async -> Result<T, ObjectStoreError> in
            do throws(ObjectStoreError) { return .success(try await request()) } catch { return .failure(error) }
        }
        return try await task.value.get()
    }

    /// How long a lease's put and release may run past the caller's deadline or cancellation.
    static let leaseGrace: Duration = .seconds(2)

    /// Writes `value` as a small JSON object (sorted keys, never cached by a CDN); false when
    /// `onlyIfAbsent` and the key was taken. A value that cannot be encoded is a `LocalError`.
    private func putJSON(_ value: some Encodable, key: String, onlyIfAbsent: Bool,
                         deadline: ContinuousClock.Instant) async throws(ObjectStoreError) -> Bool {
        let bytes: [UInt8], sha256: String
        do {
            bytes = [UInt8](try JSONWriter.data(value))
            sha256 = try SHA256Digest.hex(of: bytes)
        } catch {
            throw ObjectStoreError(code: "LocalError", message: "cannot write \(key): \(error)")
        }
        return try await store.put(key, body: .bytes(bytes), sha256: sha256, contentType: "application/json", cacheControl: "no-store",
                                   onlyIfAbsent: onlyIfAbsent, deadline: deadline) == .created
    }

    /// The record's published objects downloaded into `directory` (as `<base>.<ext>`,
    /// `<base>.thumb.<ext>`, `<base>.<platform>.<ext>`), and its descriptor pointing at them.
    func materialize(_ record: Record, base: String, deadline: ContinuousClock.Instant) async throws(ObjectStoreError) -> (AttachmentDescriptor, [String]) {
        var descriptor = record.descriptor
        var files: [String] = []
        func fetch(_ key: String, _ path: String) async throws(ObjectStoreError) {
            guard try await store.download(key, to: path, deadline: deadline) else {
                throw ObjectStoreError(code: "NoSuchKey", status: 404, message: "\(key) is gone")
            }
            files.append(path)
        }
        do throws(ObjectStoreError) {
            if let key = record.file, descriptor.status == .ready {
                let path = "\(base).\((key as NSString).pathExtension)"
                try await fetch(key, path)
                descriptor.file = path
            }
            if let key = record.thumbnail, descriptor.thumbnail != nil {
                let path = "\(base).thumb.\((key as NSString).pathExtension)"
                try await fetch(key, path)
                descriptor.thumbnail?.file = path
            }
            for (platform, key) in record.variants where descriptor.variants?[platform] != nil {
                let path = "\(base).\(platform).\((key as NSString).pathExtension)"
                try await fetch(key, path)
                descriptor.variants?[platform]?.file = path
            }
        } catch {
            for file in files { unlink(file) }
            throw error
        }
        return (descriptor, files)
    }

    /// A record of a finished result whose files were published under this store's prefix.
    func record(of descriptor: AttachmentDescriptor, headers: CacheHeaders, lifetime: Duration) -> Record {
        func key(_ url: String?) -> String? { url.map { store.target.key(($0 as NSString).lastPathComponent) } }
        var variants: [String: String] = [:]
        for (platform, variant) in descriptor.variants ?? [:] { if let key = key(variant.publishedUrl) { variants[platform] = key } }
        let now = wallNow
        return Record(descriptor: descriptor, file: key(descriptor.publishedUrl), thumbnail: key(descriptor.thumbnail?.publishedUrl),
                      variants: variants, headers: headers, storedAt: now,
                      freshUntil: now + lifetime.seconds)
    }
}
