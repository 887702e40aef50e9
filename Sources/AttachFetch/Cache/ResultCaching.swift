/// How finished results are kept for reuse (`AttachFetchConfiguration.cache`).
public struct ResultCaching: Sendable, Equatable {
    /// Longest a result is reused without asking the origin again, whatever its headers say.
    /// Default 10 minutes.
    public var maximumFreshness: Duration = .seconds(600)
    /// Freshness of a result whose origin sent no `Cache-Control: max-age`/`s-maxage` or
    /// `Expires`. Default 60 s.
    public var defaultFreshness: Duration = .seconds(60)
    /// How long a failure that would come out the same again (`httpStatus`, `unsupportedType`,
    /// `corruptMedia`, `sizeLimitExceeded`, `forbiddenAddress`, ...) is reused. Timeouts,
    /// `deadlineExceeded`, `cancelled`, `connectFailed`, `transferFailed`, `ioError` and
    /// `originUnavailable` never are. Default 30 s.
    public var failureFreshness: Duration = .seconds(30)
    /// How long at most a failure that attach-fetch's own limit caused (a decoder ended for its
    /// CPU allowance, `decoderCPUSecondsPerJob`, or its CPU or file-size limit) is reused,
    /// whatever `failureFreshness` says: 30 s. Such a failure says more about the machine and
    /// the deadline than about the media, so it is tried again soon, yet a file built to burn
    /// CPU does not cost a whole allowance on every call.
    public static let ownLimitFreshness: Duration = .seconds(30)
    /// How long a campaign's transcode may go on after a caller's deadline cut it short, to
    /// make the whole clip that later calls get. Default 120 s; `.zero` turns it off (a clip the
    /// deadline cut short is then never kept, as without a cache). The work runs on a decoder
    /// worker of its own at a lower CPU priority (nice 10) than fresh work, and its result,
    /// whole or the longest it could make by then, replaces the cut one in the cache and in the
    /// object store. Callers meanwhile get the clip already made, or the whole one when it ends
    /// before their deadline; never a second transcode of the same source.
    public var wholeClipBudget: Duration = .seconds(120)
    /// Entries kept at most; the least recently used go first. Default 10,000.
    public var maxEntries = 10_000
    /// Bytes of files (delivered files, thumbnails, variants) the entries hold at most; the
    /// least recently used go first. Default 1 GiB.
    public var maxBytes: Int64 = 1 << 30
    /// A clock for freshness other than the pipeline's; nil (the default): the pipeline's,
    /// `AttachFetchConfiguration.clock`. Set only through the deprecated `clock`.
    var clockOverride: CacheClock?

    /// What freshness is measured by when set; unset, the pipeline's clock
    /// (`AttachFetchConfiguration.clock`), and reading it gives `.system`.
    @available(*, deprecated, message: "set AttachFetchConfiguration.clock: the pipeline has one clock, which the cache uses")
    public var clock: CacheClock {
        get { clockOverride ?? .system }
        set { clockOverride = newValue }
    }

    /// Turns the cache on; each default is the documented one.
    public init(maximumFreshness: Duration = .seconds(600), defaultFreshness: Duration = .seconds(60),
                failureFreshness: Duration = .seconds(30), maxEntries: Int = 10_000, maxBytes: Int64 = 1 << 30,
                wholeClipBudget: Duration = .seconds(120)) {
        self.maximumFreshness = maximumFreshness
        self.defaultFreshness = defaultFreshness
        self.failureFreshness = failureFreshness
        self.maxEntries = maxEntries
        self.maxBytes = maxBytes
        self.wholeClipBudget = wholeClipBudget
    }

    func validate() throws(AttachFetchError) {
        guard maximumFreshness >= .zero, defaultFreshness >= .zero, failureFreshness >= .zero else {
            throw .invalidConfiguration("cache freshness times must not be negative")
        }
        guard wholeClipBudget >= .zero, wholeClipBudget <= .seconds(3_600) else {
            throw .invalidConfiguration("wholeClipBudget must be between 0 (off) and one hour")
        }
        guard maxEntries >= 1, maxBytes >= 0 else {
            throw .invalidConfiguration("the cache must allow at least one entry and must not have a negative byte bound")
        }
    }

    /// Failures that would come out the same if tried again now: reused for `failureFreshness`
    /// (`ReasonCode.Contract.reused`).
    static let cachedFailures = Set(ReasonCode.contracts.filter(\.reused).map(\.code))

    /// Failures never reused: they depend on the moment, the caller or the service, not on the
    /// media.
    static let uncachedFailures = Set(ReasonCode.contracts.filter { !$0.reused }.map(\.code))
}
