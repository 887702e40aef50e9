internal import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// libavfilter's functions that tone mapping calls (`ToneMapper`), loaded when the first PQ or
/// HLG frame needs them, not linked: libavfilter brings about 160 libraries (libflite, libass,
/// librubberband, libplacebo, ...), whose loading and relocation at every start cost each
/// process of the CLI and each fork server about 100 million instructions (the instruction
/// guard's start-and-stop figure grew 1.5 times) for a feature only HDR video uses. A decoder
/// worker reads the system's library directories (`LandlockConfinement.systemPaths`), as it
/// does for libvips' HEIF module.
struct LibAVFilter: @unchecked Sendable {
    // @unchecked Sendable: only C function pointers, set once at load and never changed.
    let graphAlloc: @convention(c) () -> UnsafeMutablePointer<AVFilterGraph>?
    let graphFree: @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVFilterGraph>?>?) -> Void
    let getByName: @convention(c) (UnsafePointer<CChar>?) -> UnsafePointer<AVFilter>?
    let graphCreateFilter: @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVFilterContext>?>?, UnsafePointer<AVFilter>?,
                                           UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafeMutableRawPointer?,
                                           UnsafeMutablePointer<AVFilterGraph>?) -> Int32
    let graphConfig: @convention(c) (UnsafeMutablePointer<AVFilterGraph>?, UnsafeMutableRawPointer?) -> Int32
    let inoutAlloc: @convention(c) () -> UnsafeMutablePointer<AVFilterInOut>?
    let inoutFree: @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVFilterInOut>?>?) -> Void
    let graphParse: @convention(c) (UnsafeMutablePointer<AVFilterGraph>?, UnsafePointer<CChar>?,
                                    UnsafeMutablePointer<UnsafeMutablePointer<AVFilterInOut>?>?,
                                    UnsafeMutablePointer<UnsafeMutablePointer<AVFilterInOut>?>?, UnsafeMutableRawPointer?) -> Int32
    let sourceWriteFrame: @convention(c) (UnsafeMutablePointer<AVFilterContext>?, UnsafePointer<AVFrame>?) -> Int32
    let sinkGetFrame: @convention(c) (UnsafeMutablePointer<AVFilterContext>?, UnsafeMutablePointer<AVFrame>?) -> Int32

    /// The library the headers were built against (its major version is its ABI).
    static let soname = "libavfilter.so.\(LIBAVFILTER_VERSION_MAJOR)"

    /// Loaded once per process, at first use; the library stays loaded.
    static let shared: Result<LibAVFilter, Reason> = {
        guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
            let why = dlerror().map { String(cString: $0) } ?? "not found"
            return .failure(Reason(code: .ioError, message: "\(soname), which tone-maps HDR video, cannot be loaded: \(why)"))
        }
        func symbol<T>(_ name: String, as type: T.Type) throws(Reason) -> T {
            guard let address = dlsym(handle, name) else {
                throw Reason(code: .ioError, message: "\(soname) has no \(name)")
            }
            return unsafeBitCast(address, to: type)
        }
        do throws(Reason) {
            return .success(LibAVFilter(
                graphAlloc: try symbol("avfilter_graph_alloc", as: (@convention(c) () -> UnsafeMutablePointer<AVFilterGraph>?).self),
                graphFree: try symbol("avfilter_graph_free", as: (@convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVFilterGraph>?>?) -> Void).self),
                getByName: try symbol("avfilter_get_by_name", as: (@convention(c) (UnsafePointer<CChar>?) -> UnsafePointer<AVFilter>?).self),
                graphCreateFilter: try symbol("avfilter_graph_create_filter", as: (@convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVFilterContext>?>?, UnsafePointer<AVFilter>?,
                                                                                                  UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafeMutableRawPointer?,
                                                                                                  UnsafeMutablePointer<AVFilterGraph>?) -> Int32).self),
                graphConfig: try symbol("avfilter_graph_config", as: (@convention(c) (UnsafeMutablePointer<AVFilterGraph>?, UnsafeMutableRawPointer?) -> Int32).self),
                inoutAlloc: try symbol("avfilter_inout_alloc", as: (@convention(c) () -> UnsafeMutablePointer<AVFilterInOut>?).self),
                inoutFree: try symbol("avfilter_inout_free", as: (@convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVFilterInOut>?>?) -> Void).self),
                graphParse: try symbol("avfilter_graph_parse_ptr", as: (@convention(c) (UnsafeMutablePointer<AVFilterGraph>?, UnsafePointer<CChar>?,
                                                                                       UnsafeMutablePointer<UnsafeMutablePointer<AVFilterInOut>?>?,
                                                                                       UnsafeMutablePointer<UnsafeMutablePointer<AVFilterInOut>?>?, UnsafeMutableRawPointer?) -> Int32).self),
                sourceWriteFrame: try symbol("av_buffersrc_write_frame", as: (@convention(c) (UnsafeMutablePointer<AVFilterContext>?, UnsafePointer<AVFrame>?) -> Int32).self),
                sinkGetFrame: try symbol("av_buffersink_get_frame", as: (@convention(c) (UnsafeMutablePointer<AVFilterContext>?, UnsafeMutablePointer<AVFrame>?) -> Int32).self)))
        } catch {
            return .failure(error)
        }
    }()
}
