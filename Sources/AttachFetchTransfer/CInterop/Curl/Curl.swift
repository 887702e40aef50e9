package import CCurl
internal import CCurlShims

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
/// Every call's result is checked; a failure becomes a reason through `failure(_:_:)`.
package final class CurlMulti {
    package let handle: UnsafeMutableRawPointer

    /// `maxIdleConnections` bounds libcurl's cache of kept-alive connections, so a pipeline
    /// holds at most that many idle sockets. `maxHostConnections`, when given, caps the
    /// connections to one host (CURLMOPT_MAX_HOST_CONNECTIONS): the queue keeps transfers to a
    /// host under the same cap, so this is the backstop that holds even across redirects.
    package init(maxIdleConnections: Int, maxHostConnections: Int? = nil) throws(AttachFetchError) {
        try CurlGlobal.ensureInitialised()
        guard let handle = curl_multi_init() else { throw .libraryInitialisation("curl_multi_init failed") }
        var options = [(CURLMOPT_MAXCONNECTS, "MAXCONNECTS", maxIdleConnections)]
        if let maxHostConnections { options.append((CURLMOPT_MAX_HOST_CONNECTIONS, "MAX_HOST_CONNECTIONS", maxHostConnections)) }
        for (option, name, value) in options {
            let code = af_curl_multi_setopt_long(handle, option, value)
            guard code == CURLM_OK else {
                curl_multi_cleanup(handle)
                throw .libraryInitialisation(Self.failure(code, "curl_multi_setopt(\(name))").message)
            }
        }
        self.handle = handle
    }

    deinit { curl_multi_cleanup(handle) }

    /// The one mapping of a multi-interface failure: libcurl's own text. The multi handle
    /// failing is the machine's or the library's problem, never the media's: `ioError`.
    package static func failure(_ code: CURLMcode, _ call: String) -> Reason {
        Reason(code: .ioError, message: "libcurl's \(call) failed: \(String(cString: curl_multi_strerror(code)))")
    }

    private func check(_ code: CURLMcode, _ call: String) -> Reason? {
        code == CURLM_OK ? nil : Self.failure(code, call)
    }

    package func add(_ easy: UnsafeMutableRawPointer) -> Reason? { check(curl_multi_add_handle(handle, easy), "curl_multi_add_handle") }
    package func remove(_ easy: UnsafeMutableRawPointer) -> Reason? { check(curl_multi_remove_handle(handle, easy), "curl_multi_remove_handle") }

    /// Runs the transfers; `running` is how many are still going.
    package func perform(running: inout Int32) -> Reason? { check(curl_multi_perform(handle, &running), "curl_multi_perform") }

    /// How long libcurl wants to wait before it is called again (-1: no opinion), or a failure.
    package func timeout() -> Result<Int, Reason> {
        var milliseconds = -1
        if let failure = check(curl_multi_timeout(handle, &milliseconds), "curl_multi_timeout") { return .failure(failure) }
        return .success(milliseconds)
    }

    /// Waits for socket activity, `wakeup()`, or the timeout.
    func poll(milliseconds: Int32) -> Reason? { check(curl_multi_poll(handle, nil, 0, milliseconds, nil), "curl_multi_poll") }

    /// A finished transfer's easy handle and result, or nil when none is waiting.
    func nextDone() -> (easy: UnsafeMutableRawPointer, result: CURLcode)? {
        var pending: Int32 = 0
        while let message = curl_multi_info_read(handle, &pending) {
            if message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle {
                return (easy, message.pointee.data.result)
            }
        }
        return nil
    }

    /// Breaks a `poll` from any thread, or says why it could not (the wakeup pipe could not be
    /// written).
    package func wakeup() -> Reason? { check(curl_multi_wakeup(handle), "curl_multi_wakeup") }
}

/// Owns one libcurl share handle that lets the easy handles of one engine resume each other's
/// TLS sessions (by default each easy handle keeps its own session cache, and every transfer
/// here has a new easy handle, so each new connection paid a full handshake). Used only on the
/// engine thread, so it needs no lock callbacks.
final class CurlShare {
    package let handle: UnsafeMutableRawPointer

    init() throws(AttachFetchError) {
        try CurlGlobal.ensureInitialised()
        guard let handle = curl_share_init() else { throw .libraryInitialisation("curl_share_init failed") }
        let code = af_curl_share_setopt_long(handle, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue))
        guard code == CURLSHE_OK else {
            curl_share_cleanup(handle)
            throw .libraryInitialisation("curl_share_setopt(SSL_SESSION) failed: \(String(cString: curl_share_strerror(code)))")
        }
        self.handle = handle
    }

    deinit { curl_share_cleanup(handle) }
}

extension CURLcode {
    package var curlMessage: String { String(cString: curl_easy_strerror(self)) }
}

/// Typed wrappers over the shims, so call sites read like curl's documentation.
package enum CurlOption {
    package static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: Int) -> CURLcode {
        af_curl_easy_setopt_long(handle, option, value)
    }
    package static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, offset value: Int64) -> CURLcode {
        af_curl_easy_setopt_off_t(handle, option, curl_off_t(value))
    }
    package static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: String) -> CURLcode {
        // libcurl copies string options (since 7.17), so the temporary C string may go.
        value.withCString { af_curl_easy_setopt_string(handle, option, $0) }
    }
    package static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, pointer value: UnsafeMutableRawPointer?) -> CURLcode {
        af_curl_easy_setopt_pointer(handle, option, value)
    }

    package static func long(_ handle: UnsafeMutableRawPointer, _ info: CURLINFO) -> Int? {
        var value = 0
        return af_curl_easy_getinfo_long(handle, info, &value) == CURLE_OK ? value : nil
    }
    package static func offset(_ handle: UnsafeMutableRawPointer, _ info: CURLINFO) -> Int64? {
        var value: curl_off_t = 0
        return af_curl_easy_getinfo_off_t(handle, info, &value) == CURLE_OK ? Int64(value) : nil
    }
    package static func string(_ handle: UnsafeMutableRawPointer, _ info: CURLINFO) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard af_curl_easy_getinfo_string(handle, info, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }
}
