package import CCurl
internal import CCurlShims
import AttachFetchCore
import AttachFetchTransfer
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// One running object-store request: owns its curl easy handle, its header list and the
/// descriptors of the file it sends or receives. Lives on the store engine's thread only
/// (libcurl calls its callbacks there), so it is deliberately not Sendable.
package final class StoreCall {
    package let request: StoreRequest
    package let handle: UnsafeMutableRawPointer
    package let result = OneShot<Result<StoreResponse, StoreCallFailure>>()
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var sendDescriptor: Int32 = -1
    private var sendOffset = 0
    private var receiveDescriptor: Int32 = -1
    private var received: [UInt8] = []
    private(set) var localFailure: String?

    /// Easy handles alive in this process (tests check that none leak).
    package static let live = Atomic<Int>(0)

    package init(_ request: StoreRequest) throws(AttachFetchError) {
        guard let handle = curl_easy_init() else { throw .libraryInitialisation("curl_easy_init failed") }
        self.request = request
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        Self.live.add(1, ordering: .relaxed)
    }

    deinit {
        Self.live.subtract(1, ordering: .relaxed)
        curl_easy_cleanup(handle)
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
        if sendDescriptor >= 0 { close(sendDescriptor) }
        if receiveDescriptor >= 0 { close(receiveDescriptor) }
    }

    /// Sets every option; a failure to report instead of starting, or nil. `now` is read from
    /// the clock the deadline is an instant of.
    /// Without `credentials` the request is not signed (the trace exporter's).
    package func prepare(credentials: ObjectStoreCredentials?, region: String, now: ContinuousClock.Instant) -> StoreCallFailure? {
        let remaining = request.deadline - now
        guard remaining > .milliseconds(1) else { return .init(kind: .deadline, message: "the deadline passed before the request could start") }
        let me = Unmanaged.passUnretained(self).toOpaque()
        var headers = request.headers
        // The token is a credential: it goes in a signed header, never in a message.
        if let token = credentials?.sessionToken { headers.append("x-amz-security-token: \(token)") }
        for line in headers {
            guard let list = curl_slist_append(headerList, line) else {
                return .init(kind: .local, message: "curl_slist_append failed (out of memory)")
            }
            headerList = list
        }
        var codes: [CURLcode] = [
            CurlOption.set(handle, CURLOPT_URL, request.url),
            CurlOption.set(handle, CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer)),
            CurlOption.set(handle, CURLOPT_NOSIGNAL, 1),
            CurlOption.set(handle, CURLOPT_PROTOCOLS_STR, "http,https"),
            // The store's own redirects are never followed: a signed request is for one host.
            CurlOption.set(handle, CURLOPT_FOLLOWLOCATION, 0),
            CurlOption.set(handle, CURLOPT_CONNECTTIMEOUT_MS, request.connectTimeout.timeoutMilliseconds),
            CurlOption.set(handle, CURLOPT_TIMEOUT_MS, remaining.timeoutMilliseconds),
            CurlOption.set(handle, CURLOPT_USERAGENT, Release.userAgent),
            CurlOption.set(handle, CURLOPT_PROXY, ""),
            CurlOption.set(handle, CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2)),
            CurlOption.set(handle, CURLOPT_HTTPHEADER, pointer: UnsafeMutableRawPointer(headerList)),
            CurlOption.set(handle, CURLOPT_WRITEDATA, pointer: me),
            CurlOption.set(handle, CURLOPT_READDATA, pointer: me),
        ]
        if let credentials {
            // libcurl signs the request itself (AWS Signature Version 4, service s3).
            codes += [CurlOption.set(handle, CURLOPT_AWS_SIGV4, "aws:amz:\(region):s3"),
                      CurlOption.set(handle, CURLOPT_USERNAME, credentials.accessKeyID),
                      CurlOption.set(handle, CURLOPT_PASSWORD, credentials.secretAccessKey)]
        }
        switch request.method {
        case .get: break
        case .post:
            // The body comes from the read callback, as an upload's does.
            codes.append(CurlOption.set(handle, CURLOPT_POST, 1))
            if case .bytes(let bytes) = request.body {
                codes.append(CurlOption.set(handle, CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(bytes.count)))
            }
        case .head: codes.append(CurlOption.set(handle, CURLOPT_NOBODY, 1))
        case .delete: codes.append(CurlOption.set(handle, CURLOPT_CUSTOMREQUEST, "DELETE"))
        case .put:
            codes.append(CurlOption.set(handle, CURLOPT_UPLOAD, 1))
            switch request.body {
            case .none:
                codes.append(CurlOption.set(handle, CURLOPT_INFILESIZE_LARGE, offset: 0))
            case .bytes(let bytes):
                codes.append(CurlOption.set(handle, CURLOPT_INFILESIZE_LARGE, offset: Int64(bytes.count)))
            case .file(let path, let size):
                sendDescriptor = open(UnnamedFile.openable(path), O_RDONLY | O_CLOEXEC)
                guard sendDescriptor >= 0 else {
                    return .init(kind: .local, message: "cannot open \(path): \(String(cString: strerror(errno)))")
                }
                codes.append(CurlOption.set(handle, CURLOPT_INFILESIZE_LARGE, offset: size))
            }
        }
        if case .file(let path) = request.destination {
            receiveDescriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard receiveDescriptor >= 0 else {
                return .init(kind: .local, message: "cannot create \(path): \(String(cString: strerror(errno)))")
            }
        }
        codes.append(af_curl_easy_setopt_write_function(handle, CURLOPT_WRITEFUNCTION) { data, size, count, me in
            StoreCall.from(me).receive(UnsafeRawBufferPointer(start: data, count: size * count))
        })
        // curl_read_callback has curl_write_callback's signature.
        codes.append(af_curl_easy_setopt_write_function(handle, CURLOPT_READFUNCTION) { data, size, count, me in
            StoreCall.from(me).send(into: UnsafeMutableRawBufferPointer(start: data, count: size * count))
        })
        if let failed = codes.first(where: { $0 != CURLE_OK }) {
            return .init(kind: .local, message: "libcurl refused an option (an internal error): \(failed.curlMessage)")
        }
        return nil
    }

    private static func from(_ pointer: UnsafeMutableRawPointer?) -> StoreCall {
        Unmanaged<StoreCall>.fromOpaque(pointer!).takeUnretainedValue()
    }

    private func send(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        switch request.body {
        case .none: return 0
        case .bytes(let bytes):
            let count = min(buffer.count, bytes.count - sendOffset)
            bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + sendOffset, byteCount: count) }
            sendOffset += count
            return count
        case .file:
            while true {
                let count = read(sendDescriptor, buffer.baseAddress, buffer.count)
                if count < 0 && errno == EINTR { continue }
                if count < 0 {
                    localFailure = "cannot read the file being uploaded: \(String(cString: strerror(errno)))"
                    return Int(CURL_READFUNC_ABORT)
                }
                return count
            }
        }
    }

    private func receive(_ chunk: UnsafeRawBufferPointer) -> Int {
        let status = CurlOption.long(handle, CURLINFO_RESPONSE_CODE) ?? 0
        // An error document always goes to memory, whatever the destination of a success.
        if receiveDescriptor >= 0, (200..<300).contains(status) {
            var offset = 0
            while offset < chunk.count {
                let written = write(receiveDescriptor, chunk.baseAddress! + offset, chunk.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    localFailure = "cannot write the downloaded object: \(String(cString: strerror(errno)))"
                    return 0
                }
                offset += written
            }
            return chunk.count
        }
        let limit: Int
        if case .memory(let given) = request.destination { limit = given } else { limit = 64 * 1024 }
        guard received.count + chunk.count <= limit else {
            localFailure = "the store's answer exceeds \(limit) bytes"
            return 0
        }
        received.append(contentsOf: chunk)
        return chunk.count
    }

    /// The answer, or why there is none; a partly received file is removed.
    package func complete(curlCode: CURLcode?, cancelled: Bool) -> Result<StoreResponse, StoreCallFailure> {
        if receiveDescriptor >= 0 {
            close(receiveDescriptor)
            receiveDescriptor = -1
        }
        let status = CurlOption.long(handle, CURLINFO_RESPONSE_CODE) ?? 0
        let outcome: Result<StoreResponse, StoreCallFailure>
        if cancelled {
            outcome = .failure(.init(kind: .cancelled, message: "the request was cancelled"))
        } else if let localFailure {
            outcome = .failure(.init(kind: .local, message: localFailure))
        } else if let curlCode, curlCode == CURLE_OK {
            outcome = .success(StoreResponse(status: status, body: received))
        } else if let curlCode, curlCode == CURLE_OPERATION_TIMEDOUT, request.deadline <= .now + .milliseconds(5) {
            outcome = .failure(.init(kind: .deadline, message: "the deadline passed during the request"))
        } else {
            let detail = String(cString: errorBuffer)
            let text = curlCode.map { $0.curlMessage } ?? "not started"
            outcome = .failure(.init(kind: .connection, message: detail.isEmpty ? text : "\(text): \(detail)"))
        }
        if case .file(let path) = request.destination, !(200..<300).contains(status) || (try? outcome.get()) == nil {
            unlink(path)
        }
        return outcome
    }
}
