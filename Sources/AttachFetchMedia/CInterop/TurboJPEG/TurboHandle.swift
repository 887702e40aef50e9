internal import CTurboJPEG

/// One TurboJPEG instance. Not thread-safe (not Sendable): made and used by one call.
final class TurboHandle {
    package let handle: tjhandle

    init(compress: Bool) throws(Reason) {
        guard let handle = compress ? tjInitCompress() : tjInitDecompress() else {
            throw Reason(code: .ioError, message: "libjpeg-turbo cannot start: \(String(cString: tjGetErrorStr2(nil)))")
        }
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    /// The one mapping of a libjpeg-turbo failure: its message for the last failure on this
    /// handle. The code is the caller's: a decode fails on the media, an encode on the machine.
    package func failure(_ code: ReasonCode, _ doing: String) -> Reason {
        Reason(code: code, message: "libjpeg-turbo cannot \(doing): \(String(cString: tjGetErrorStr2(handle)))")
    }
}
