import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A test CA and server certificates, made at test time with the `openssl` command.
final class TestCertificates: Sendable {
    let directory = Scratch()
    var path: String { directory.path }

    init() throws {
        // Made first: its notAfter is its notBefore, so it has expired by the time it is used.
        try makeCA("ca", subject: "attach-fetch test CA")
        try makeServer("expired", ca: "ca", names: "IP:127.0.0.1", days: 0)
        try makeServer("server", ca: "ca", names: "IP:127.0.0.1,DNS:localhost", days: 2)
        try makeServer("wrong-host", ca: "ca", names: "DNS:media.other.example", days: 2)
        try makeCA("stranger", subject: "a CA nobody trusts")
        try makeServer("untrusted", ca: "stranger", names: "IP:127.0.0.1", days: 2)
        // What App Transport Security refuses: a SHA-1 signature, a 1024-bit RSA key.
        try makeServer("sha1", ca: "ca", names: "IP:127.0.0.1", days: 2, digest: "sha1")
        try makeServer("weak-key", ca: "ca", names: "IP:127.0.0.1", days: 2, keyBits: 1024)
        try waitUntilExpired("expired")
    }

    func pem(_ name: String) -> String { "\(path)/\(name).pem" }
    func key(_ name: String) -> String { "\(path)/\(name).key" }

    private func makeCA(_ name: String, subject: String) throws {
        try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2", "-subj", "/CN=\(subject)",
                     "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                     "-keyout", key(name), "-out", pem(name)])
    }

    private func makeServer(_ name: String, ca: String, names: String, days: Int,
                            digest: String = "sha256", keyBits: Int = 2048) throws {
        let extensions = "\(path)/\(name).ext"
        try "subjectAltName=\(names)\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            .write(toFile: extensions, atomically: true, encoding: .utf8)
        try openssl(["req", "-newkey", "rsa:\(keyBits)", "-nodes", "-subj", "/CN=\(name)", "-keyout", key(name), "-out", "\(path)/\(name).csr"])
        try openssl(["x509", "-req", "-in", "\(path)/\(name).csr", "-CA", pem(ca), "-CAkey", key(ca), "-CAcreateserial",
                     "-\(digest)", "-days", "\(days)", "-extfile", extensions, "-out", pem(name)])
    }

    /// Returns once OpenSSL, which verifies libcurl's peers, reads the certificate as expired
    /// (`-checkend 0` exits 1 once its notAfter is not after now); polls every 10 ms.
    private func waitUntilExpired(_ name: String) throws {
        struct NotExpired: Error { let name: String }
        guard try pollUntil(timeout: .seconds(10), { try opensslStatus(["x509", "-checkend", "0", "-noout", "-in", pem(name)]) != 0 }) else {
            throw NotExpired(name: name)
        }
    }

    private func openssl(_ arguments: [String]) throws {
        struct OpenSSLFailed: Error { let arguments: [String] }
        guard try opensslStatus(arguments) == 0 else { throw OpenSSLFailed(arguments: arguments) }
    }

    private func opensslStatus(_ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// nginx from Debian, serving a directory over TLS (and HTTP/2 by ALPN) on 127.0.0.1 only,
/// with an access log that names each request's connection. Stopped by `shutdown()`.
final class NginxTLSServer {
    let port: Int
    let prefix = Scratch()
    private let process = Process()

    var baseURL: String { "https://127.0.0.1:\(port)" }

    /// - Parameters:
    ///   - certificate: the base name of a certificate in `certificates`.
    ///   - protocols: nginx's `ssl_protocols`; `ciphers` its `ssl_ciphers`.
    init(serving directory: String, certificates: TestCertificates, certificate: String = "server",
         protocols: String = "TLSv1.2 TLSv1.3", ciphers: String = "HIGH:!aNULL", locations: String = "") throws {
        port = try Self.freeLoopbackPort()
        let p = prefix.path
        let configuration = """
        daemon off; master_process off; worker_processes 1;
        pid \(p)/nginx.pid; error_log \(p)/error.log warn;
        events { worker_connections 1024; }
        http {
            log_format connection '$connection $server_protocol $request_uri';
            access_log \(p)/access.log connection;
            client_body_temp_path \(p)/body; proxy_temp_path \(p)/proxy; fastcgi_temp_path \(p)/fastcgi;
            uwsgi_temp_path \(p)/uwsgi; scgi_temp_path \(p)/scgi;
            types { image/jpeg jpg; image/png png; audio/mpeg mp3; video/mp4 mp4; }
            keepalive_requests 10000;
            server {
                listen 127.0.0.1:\(port) ssl http2;
                ssl_certificate \(certificates.pem(certificate));
                ssl_certificate_key \(certificates.key(certificate));
                ssl_protocols \(protocols);
                ssl_ciphers "\(ciphers)";
                root \(directory);
                \(locations)
            }
        }
        """
        try configuration.write(toFile: "\(p)/nginx.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-p", p, "-c", "\(p)/nginx.conf", "-e", "\(p)/error.log"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try waitUntilListening()
    }

    deinit { shutdown() }

    /// SIGKILL: with `master_process off` nginx keeps its signals blocked outside its event
    /// loop, and a test server has nothing to flush.
    func shutdown() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// The access log's lines: connection serial number, protocol, request URI.
    func accessLog() -> [(connection: String, protocolName: String, uri: String)] {
        let text = (try? String(contentsOfFile: "\(prefix.path)/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
            return parts.count == 3 ? (parts[0], parts[1], parts[2]) : nil
        }
    }

    private func waitUntilListening() throws {
        struct NginxDidNotStart: Error, CustomStringConvertible { let description: String }
        let port = self.port
        _ = pollUntil(timeout: .seconds(10)) { LoopbackSockets.canConnect(port: port) || !process.isRunning }
        if process.isRunning && LoopbackSockets.canConnect(port: port) { return }
        let log = (try? String(contentsOfFile: "\(prefix.path)/error.log", encoding: .utf8)) ?? ""
        throw NginxDidNotStart(description: "nginx did not start: \(log)")
    }

    /// A port the kernel just gave out on 127.0.0.1 (bound, read back, closed).
    static func freeLoopbackPort() throws -> Int {
        struct NoPort: Error {}
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw NoPort() }
        defer { close(fd) }
        guard let port = LoopbackSockets.bindEphemeral(fd) else { throw NoPort() }
        return port
    }
}
