import CCurl
import CAttachFetchShims

/// libcurl's global state, initialised once per process before the first handle is made
/// (`curl_global_init` is not thread-safe; a static `let` runs its initialiser exactly once).
enum CurlGlobal {
    static let initialised: CURLcode = curl_global_init(Int(CURL_GLOBAL_ALL))

    static func ensureInitialised() throws(AttachFetchError) {
        let code = initialised
        guard code == CURLE_OK else {
            throw .libraryInitialisation("curl_global_init failed: \(String(cString: curl_easy_strerror(code)))")
        }
    }
}

/// Owns one libcurl multi handle. libcurl handles are not thread-safe: only the engine thread
/// calls into it, except `wakeup()`, which libcurl documents as callable from any thread.
final class CurlMulti {
    let handle: UnsafeMutableRawPointer

    /// `maxIdleConnections` bounds libcurl's cache of kept-alive connections, so a pipeline
    /// holds at most that many idle sockets.
    init(maxIdleConnections: Int) throws(AttachFetchError) {
        try CurlGlobal.ensureInitialised()
        guard let handle = curl_multi_init() else { throw .libraryInitialisation("curl_multi_init failed") }
        self.handle = handle
        af_curl_multi_setopt_long(handle, CURLMOPT_MAXCONNECTS, maxIdleConnections)
    }

    deinit { curl_multi_cleanup(handle) }

    func wakeup() { curl_multi_wakeup(handle) }
}

extension CURLcode {
    var curlMessage: String { String(cString: curl_easy_strerror(self)) }
}

/// Typed wrappers over the shims, so call sites read like curl's documentation.
enum CurlOption {
    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: Int) -> CURLcode {
        af_curl_easy_setopt_long(handle, option, value)
    }
    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, offset value: Int64) -> CURLcode {
        af_curl_easy_setopt_off_t(handle, option, curl_off_t(value))
    }
    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: String) -> CURLcode {
        // libcurl copies string options (since 7.17), so the temporary C string may go.
        value.withCString { af_curl_easy_setopt_string(handle, option, $0) }
    }
    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, pointer value: UnsafeMutableRawPointer?) -> CURLcode {
        af_curl_easy_setopt_pointer(handle, option, value)
    }

    static func long(_ handle: UnsafeMutableRawPointer, _ info: CURLINFO) -> Int? {
        var value = 0
        return af_curl_easy_getinfo_long(handle, info, &value) == CURLE_OK ? value : nil
    }
    static func offset(_ handle: UnsafeMutableRawPointer, _ info: CURLINFO) -> Int64? {
        var value: curl_off_t = 0
        return af_curl_easy_getinfo_off_t(handle, info, &value) == CURLE_OK ? Int64(value) : nil
    }
    static func string(_ handle: UnsafeMutableRawPointer, _ info: CURLINFO) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard af_curl_easy_getinfo_string(handle, info, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }
}
