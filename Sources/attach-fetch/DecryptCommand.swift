import ArgumentParser
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
        guard let text = FileManager.default.contents(atPath: keyFile),
              let key = ContentKey(base64URL: String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw ValidationError("--key-file \(keyFile) must hold a base64url key of 16 bytes")
        }
        guard let source = FileHandle(forReadingAtPath: input) else { throw ValidationError("\(input) cannot be read") }
        guard !FileManager.default.fileExists(atPath: output),
              FileManager.default.createFile(atPath: output, contents: nil, attributes: [.posixPermissions: 0o600]),
              let sink = FileHandle(forWritingAtPath: output) else {
            throw ValidationError("\(output) exists or cannot be created")
        }
        var decoder = ContentDecoder(key: key)
        var digest = SHA256Hasher()
        do {
            while let chunk = try source.read(upToCount: 1 << 16), !chunk.isEmpty {
                try decoder.feed(chunk) { digest.update($0); try sink.write(contentsOf: $0) }
            }
            try decoder.finish { digest.update($0); try sink.write(contentsOf: $0) }
            try sink.close()
            if let sha256, digest.hex != sha256.lowercased() {
                throw ContentEncryptionError(.malformed, "the plaintext's SHA-256 is \(digest.hex), not \(sha256)")
            }
        } catch {
            try? FileManager.default.removeItem(atPath: output)
            FileHandle.standardError.write(Data("attach-fetch decrypt: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
