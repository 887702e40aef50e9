import ArgumentParser
import AttachFetch
import EncryptedContent
import Foundation

/// `attach-fetch decrypt --key-file KEY IN OUT`: one published `aes128gcm` object back to its
/// plaintext, streamed record by record, to check what a device will get.
struct DecryptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt",
        abstract: "Decrypt a published aes128gcm object (RFC 8188) with its key from a descriptor.",
        discussion: "The key file holds the descriptor's encryption.key (base64url of 16 bytes); keys are never taken on the command line. OUT is written only when the whole object decrypts (and, with --sha256, matches)."
    )

    @Option(name: .customLong("key-file"), help: ArgumentHelp("A file holding the key, base64url (the descriptor's encryption.key).", valueName: "FILE"))
    var keyFile: String

    @Option(help: ArgumentHelp("The plaintext's SHA-256 (the descriptor's sha256); a mismatch fails.", valueName: "HEX"))
    var sha256: String?

    @Argument(help: ArgumentHelp("The encrypted object.", valueName: "IN"))
    var input: String

    @Argument(help: ArgumentHelp("Where the plaintext goes; it must not exist.", valueName: "OUT"))
    var output: String

    func run() throws {
        // Held to the media key file's rules: only its owner may read it.
        let text: [UInt8]
        do throws(AttachFetchError) { text = try SecretFile.read(keyFile, what: "--key-file") } catch { throw ValidationError(error.message) }
        guard let key = ContentKey(base64URL: String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw ValidationError("--key-file \(keyFile) must hold a base64url key of 16 bytes")
        }
        guard let source = FileHandle(forReadingAtPath: input) else { Self.fail(2, "\(input) cannot be read") }
        // O_EXCL: the plaintext never replaces a file, not even one made a moment ago.
        let descriptor = open(output, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            Self.fail(2, errno == EEXIST ? "\(output) already exists; decrypt never overwrites: remove it or name another file"
                                         : "\(output) cannot be created: \(String(cString: strerror(errno)))")
        }
        let sink = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var decoder = ContentDecoder(key: key)
        var digest = SHA256Hasher()
        do {
            while let chunk = try source.read(upToCount: 1 << 16), !chunk.isEmpty {
                try decoder.feed(chunk) { digest.update($0); try sink.write(contentsOf: $0) }
            }
            try decoder.finish { digest.update($0); try sink.write(contentsOf: $0) }
            try sink.close()
            if let sha256, digest.hex != sha256.lowercased() {
                throw HashMismatch(found: digest.hex, expected: sha256)
            }
        } catch {
            try? FileManager.default.removeItem(atPath: output)
            FileHandle.standardError.write(Data("attach-fetch decrypt: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// The decrypted bytes are whole and authentic, but not the plaintext the descriptor names.
    struct HashMismatch: Error, CustomStringConvertible {
        let found: String, expected: String
        var description: String { "hashMismatch: the plaintext's SHA-256 is \(found), not \(expected)" }
    }

    /// A message naming what is wrong, on standard error, and the exit status (2: the command
    /// line cannot work; 1: the object does not decrypt).
    static func fail(_ status: Int32, _ message: String) -> Never {
        FileHandle.standardError.write(Data("attach-fetch decrypt: \(message)\n".utf8))
        Foundation.exit(status)
    }
}
