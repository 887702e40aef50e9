import ArgumentParser
import AttachFetch
import Foundation

/// Where ready files are published, and for which platforms variants are made.
struct PublishingOptions: ParsableArguments {
    @Option(name: .customLong("publish-dir"), help: ArgumentHelp("Store ready files, thumbnails and variants here, content-addressed (<sha256>.<ext>), for devices to fetch; needs --public-base. The directory must exist.", valueName: "DIR"))
    var publishDir: String?

    @Option(name: .customLong("public-base"), help: ArgumentHelp("The http(s) URL --publish-dir (or --publish-to's prefix) is served at; descriptors get publishedUrl.", valueName: "URL"))
    var publicBase: String?

    @Option(name: .customLong("publish-to"), help: ArgumentHelp("Publish to an S3-compatible object store instead, as PREFIX/<sha256>.<ext>; with the service's cache, the store is also the result cache replicas share. Credentials come from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN) or the profile AWS_PROFILE of the shared credentials file; the region from AWS_REGION or AWS_DEFAULT_REGION (default us-east-1). Needs --public-base.", valueName: "s3://BUCKET/PREFIX"))
    var publishTo: String?

    @Option(name: .customLong("s3-endpoint"), help: ArgumentHelp("The object store's URL (default: AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else AWS's regional endpoint). A given endpoint is addressed path-style.", valueName: "URL"))
    var s3Endpoint: String?

    @Flag(name: .customLong("s3-virtual-hosted"), help: "Address the bucket virtual-hosted style (BUCKET.host) even with --s3-endpoint.")
    var s3VirtualHosted = false

    @Flag(name: .customLong("encrypt-media"), help: "Publish everything (files, thumbnails, variants) encrypted as RFC 8188 aes128gcm, each with its own key in the descriptor; needs --media-key-file. Without it, serve encrypts only requests that ask (\"encrypt\": true).")
    var encryptMedia = false

    @Option(name: .customLong("media-key-file"), help: ArgumentHelp("The secret media keys are derived from: a file of at least 32 random bytes that other users cannot read (e.g. head -c 32 /dev/urandom > key; chmod 600 key).", valueName: "FILE"))
    var mediaKeyFile: String?

    @Option(help: ArgumentHelp("Platforms the media must show on (ios, android); a variant is made for each whose limits the file breaks. With --payload, android is added when a key Android reads is present.", valueName: "LIST"))
    var platforms: String = "ios"

    func validate() throws {
        do { _ = try Platform.list(platforms) } catch { throw ValidationError("--platforms: \(error.message)") }
        guard publishDir == nil || publishTo == nil else {
            throw ValidationError("--publish-dir and --publish-to: publish to one of them, not both")
        }
        guard (publishDir == nil && publishTo == nil) == (publicBase == nil) else {
            throw ValidationError(publicBase == nil ? "--\(publishDir == nil ? "publish-to" : "publish-dir") needs --public-base"
                                                    : "--public-base goes with --publish-dir or --publish-to")
        }
        guard publishTo != nil || (s3Endpoint == nil && !s3VirtualHosted) else {
            throw ValidationError("--s3-endpoint and --s3-virtual-hosted go with --publish-to")
        }
        guard !encryptMedia || mediaKeyFile != nil else { throw ValidationError("--encrypt-media needs --media-key-file") }
        if mediaKeyFile != nil && publishDir == nil && publishTo == nil {
            throw ValidationError("--media-key-file encrypts what is published: it needs --publish-dir or --publish-to")
        }
        do { _ = try mediaEncryption() } catch { throw ValidationError("--media-key-file: \(error.message)") }
        var check = AttachFetchConfiguration()
        check.publish = publishing
        do {
            check.objectStore = try objectStore()
            try check.validate()
        } catch {
            throw ValidationError("\(publishTo == nil ? "--publish-dir" : "--publish-to")/--public-base: \(error.message)")
        }
    }

    /// The object store target, with what the command line leaves out read from the environment.
    private func objectStore() throws(AttachFetchError) -> ObjectStorePublishing? {
        guard let publishTo, let publicBase else { return nil }
        return try ObjectStorePublishing.fromEnvironment(location: publishTo, baseURL: publicBase, endpoint: s3Endpoint,
                                                         virtualHostedStyle: s3VirtualHosted ? true : nil)
    }

    /// The media key, read from its file (never from the command line).
    private func mediaEncryption() throws(AttachFetchError) -> MediaEncryption? {
        guard let mediaKeyFile else { return nil }
        var encryption = try MediaEncryption(keyFile: mediaKeyFile)
        encryption.encryptsEverything = encryptMedia
        return encryption
    }

    private var publishing: Publishing? {
        guard let publishDir, let publicBase else { return nil }
        return Publishing(directory: URL(fileURLWithPath: publishDir).standardizedFileURL.path, baseURL: publicBase)
    }

    func apply(to configuration: inout AttachFetchConfiguration) throws {
        configuration.platforms = try Platform.list(platforms)
        configuration.publish = publishing
        configuration.objectStore = try objectStore()
        configuration.mediaEncryption = try mediaEncryption()
    }
}

/// `attach-fetch prune --publish-dir DIR --older-than DAYS`.
struct PruneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Remove published files not modified for a number of days (publishing itself never deletes).",
        discussion: "Only names attach-fetch publishes (<sha256>.<ext>) and its own leftover temporary files are considered; anything else in the directory is left alone."
    )

    @Option(name: .customLong("publish-dir"), help: ArgumentHelp("The publish directory.", valueName: "DIR"))
    var publishDir: String

    @Option(name: .customLong("older-than"), help: ArgumentHelp("Remove files not modified for this many days (fractions allowed, e.g. 0.5).", valueName: "DAYS"))
    var olderThan: Double

    func validate() throws {
        guard olderThan.isFinite, olderThan >= 0 else { throw ValidationError("--older-than must be a number of days, 0 or more") }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: publishDir, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("--publish-dir \(publishDir) is not a directory")
        }
    }

    func run() throws {
        let result = try Publisher.prune(directory: publishDir, olderThan: .seconds(olderThan * 86_400))
        print("attach-fetch: removed \(result.files) files (\(result.bytes) bytes) from \(publishDir)")
    }
}
