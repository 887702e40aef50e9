internal import CTurboJPEG

/// One TurboJPEG instance. Not thread-safe (not Sendable): made and used by one call.
final class TurboHandle {
    let handle: tjhandle

    init(compress: Bool) throws(Reason) {
        guard let handle = compress ? tjInitCompress() : tjInitDecompress() else {
            throw Reason(code: .ioError, message: "libjpeg-turbo cannot start: \(String(cString: tjGetErrorStr2(nil)))")
        }
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    /// libjpeg-turbo's message for the last failure on this handle.
    var error: String { String(cString: tjGetErrorStr2(handle)) }
}
