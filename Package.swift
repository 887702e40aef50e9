// swift-tools-version:6.1
import PackageDescription
import Foundation

// The codec's primitives (EncryptedContent) come from CryptoKit on Apple platforms and from
// OpenSSL's libcrypto on Linux. ATTACH_FETCH_SWIFT_CRYPTO=1 builds the CryptoKit-API code on
// Linux against swift-crypto instead, so that it is compiled and checked here too (.ci/run).
let checksCryptoKitCode = ProcessInfo.processInfo.environment["ATTACH_FETCH_SWIFT_CRYPTO"] == "1"
let buildsDocumentation = ProcessInfo.processInfo.environment["ATTACH_FETCH_DOCS"] == "1"

// Every dependency on another package is the pipeline's, the service's, the CLI's or their
// tests', under the trait Server (on by default): an app that depends on attach-fetch with
// `traits: []` for AttachFetchDevice resolves none of those packages (docs/encryption.md).
let serverOnly: TargetDependencyCondition? = .when(traits: ["Server"])

let package = Package(
    name: "attach-fetch",
    // One list for the whole package, so it is the device library's floor (AttachFetchDevice
    // with EncryptedContent and DeadlineRace): iOS 15 and macOS 12, the first with async/await.
    // The rest builds on Linux alone (seccomp, Landlock, /proc), so the higher floors of its
    // packages (swift-prometheus: iOS 16, macOS 13) never apply.
    platforms: [.iOS(.v15), .macOS(.v12)],
    products: [
        .library(name: "AttachFetch", targets: ["AttachFetch"]),
        .executable(name: "attach-fetch", targets: ["attach-fetch"]),
        // The decoder worker process the pipeline starts; keep it beside the program using the library.
        .executable(name: "attach-fetch-decoder", targets: ["attach-fetch-decoder"]),
        // For the device: a Notification Service Extension's side of encrypted media (RFC 8188).
        // Foundation and CryptoKit only on Apple platforms, so that an iOS extension can link it.
        .library(name: "AttachFetchDevice", targets: ["AttachFetchDevice"]),
    ],
    traits: [
        .trait(name: "Server", description: "The pipeline, the service, the CLI and their tests, with the packages they use."),
        .default(enabledTraits: ["Server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Deque and Heap: the transfer queue (already built as a dependency of the service's).
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // The service (`attach-fetch serve`): HTTP server, lifecycle and signals, Prometheus text.
        // Without the default trait ConfigurationSupport: the service reads its own settings, and
        // swift-configuration (48 files) would only lengthen every build from scratch.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // The loopback test origin (already built as a dependency of the service's).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // HTTP request and response types and their NIO channel handlers, as Hummingbird uses
        // them (already built as its dependencies): the service names them itself.
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
    ] + (checksCryptoKitCode ? [.package(url: "https://github.com/apple/swift-crypto", from: "3.12.3")] : [])
      // The DocC plugin serves no target: declared only to build the documentation
      // (ATTACH_FETCH_DOCS=1 swift package generate-documentation ..., docs/library.md).
      + (buildsDocumentation ? [.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0")] : []),
    targets: [
        // System libraries, found through pkg-config, installed from Debian's -dev packages.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CMagic", pkgConfig: "libmagic", providers: [.apt(["libmagic-dev"])]),
        .systemLibrary(name: "CVips", pkgConfig: "vips", providers: [.apt(["libvips-dev"])]),
        // FFmpeg's libavformat, libavcodec, libavfilter (tone mapping: zscale, tonemap),
        // libswscale, libswresample and libavutil, for probing, remuxing and transcoding.
        .systemLibrary(name: "CFFmpeg", pkgConfig: "libavformat",
                       providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavfilter-dev", "libswscale-dev", "libswresample-dev", "libavutil-dev"])]),
        // libjpeg-turbo's TurboJPEG API: the fast path for plain JPEG thumbnails.
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(name: "CLCMS2", pkgConfig: "lcms2", providers: [.apt(["liblcms2-dev"])]),
        // OpenSSL: libcrypto (SHA-256, PEM) and libssl (reading the TLS session libcurl negotiated).
        .systemLibrary(name: "CLibcrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // Wrappers for the C calls Swift cannot make (variadic, or declared only under _GNU_SOURCE),
        // one target per library so that each sits under its users. No logic. Files, descriptors
        // and the decoder sandbox:
        .target(name: "CAttachFetchShims"),
        .target(name: "CCurlShims", dependencies: ["CCurl"]),
        .target(name: "CVipsShims", dependencies: ["CVips"]),
        .target(name: "CFFmpegShims", dependencies: ["CFFmpeg"]),

        // "Run these, answer when all are done or the deadline comes": one race for the pipeline's
        // batches and the device's fetcher. Foundation only.
        .target(name: "DeadlineRace"),
        // RFC 8188 aes128gcm records and the media keys: the one codec both sides use.
        // AES-128-GCM, HKDF and HMAC from CryptoKit on Apple platforms, libcrypto on Linux
        // (which the pipeline links already: no second crypto library to build or ship).
        .target(name: "EncryptedContent",
                dependencies: checksCryptoKitCode ? [.product(name: "Crypto", package: "swift-crypto")]
                    : [.target(name: "CLibcrypto", condition: .when(platforms: [.linux]))],
                swiftSettings: checksCryptoKitCode ? [.define("SWIFT_CRYPTO")] : []),
        .target(name: "AttachFetchDevice", dependencies: ["EncryptedContent", "DeadlineRace"]),
        // The library, in layers along the data's path (docs/architecture.md, "Targets"): each
        // target imports only those below it. The vocabulary, sniffing, files and support.
        .target(
            name: "AttachFetchCore",
            dependencies: ["CMagic", "EncryptedContent", "CAttachFetchShims"]
        ),
        // The runtime machinery below the layers that run work: a batch and its deadline, the
        // thread pools, blocking work off the cooperative pool.
        .target(
            name: "AttachFetchRuntime",
            dependencies: ["AttachFetchCore", "DeadlineRace", .product(name: "DequeModule", package: "swift-collections", condition: serverOnly)]
        ),
        // The decoder worker's job protocol, the one thing the worker and its keeper share: the
        // jobs and answers, their wire format and framing, the worker's limits and environment.
        .target(name: "AttachFetchDecoderProtocol", dependencies: ["AttachFetchCore", "CAttachFetchShims"]),
        // What confines a decoder worker: limits, capabilities, namespaces, Landlock, the seccomp
        // filter. Links no decoder, so the worker, filter-check and hostile-decoder share it.
        .target(name: "DecoderSandbox", dependencies: ["AttachFetchDecoderProtocol", "CAttachFetchShims"]),
        // What runs inside the confined decoder worker: decoding, converting, thumbnails, probing,
        // transcoding. Links libvips and FFmpeg, and nothing that fetches, publishes or serves.
        .target(name: "AttachFetchMedia",
                dependencies: ["AttachFetchCore", "AttachFetchDecoderProtocol", "DecoderSandbox", "CVips", "CFFmpeg", "CTurboJPEG", "CLCMS2", "CVipsShims", "CFFmpegShims", "CAttachFetchShims"]),
        // The pipeline's side of the worker: starting, feeding, killing and checking it. Links no
        // decoder.
        .target(name: "AttachFetchDecoderKeeper", dependencies: ["AttachFetchCore", "AttachFetchRuntime", "AttachFetchDecoderProtocol", "CAttachFetchShims"]),
        // Downloads: the transfer engine on libcurl, address and TLS checks.
        .target(
            name: "AttachFetchTransfer",
            dependencies: [
                "AttachFetchCore", "AttachFetchRuntime", "CCurl", "CLibcrypto", "CCurlShims",
                .product(name: "Logging", package: "swift-log", condition: serverOnly),
                .product(name: "DequeModule", package: "swift-collections", condition: serverOnly),
                .product(name: "HeapModule", package: "swift-collections", condition: serverOnly),
            ]
        ),
        // The S3 client the pipeline publishes and shares results through: requests signed by
        // libcurl (CURLOPT_AWS_SIGV4) on an engine of its own, retried within the caller's deadline.
        .target(
            name: "AttachFetchObjectStore",
            dependencies: [
                "AttachFetchCore", "AttachFetchTransfer", "CCurl", "CCurlShims",
                .product(name: "Logging", package: "swift-log", condition: serverOnly),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: serverOnly),
            ]
        ),
        // The pipeline; `import AttachFetch` gives the public API of every layer.
        .target(
            name: "AttachFetch",
            dependencies: [
                "AttachFetchCore", "AttachFetchRuntime", "AttachFetchTransfer", "AttachFetchMedia", "AttachFetchDecoderProtocol", "AttachFetchDecoderKeeper",
                "AttachFetchObjectStore", "EncryptedContent", "CAttachFetchShims",
                .product(name: "Logging", package: "swift-log", condition: serverOnly),
                .product(name: "DequeModule", package: "swift-collections", condition: serverOnly),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: serverOnly),
            ]
        ),
        .executableTarget(name: "attach-fetch-decoder", dependencies: ["AttachFetchMedia"]),
        // The pipeline as an HTTP service, for `attach-fetch serve` and its tests.
        .target(
            name: "AttachFetchService",
            dependencies: [
                "AttachFetch", "AttachFetchRuntime",
                .product(name: "Hummingbird", package: "hummingbird", condition: serverOnly),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: serverOnly),
                .product(name: "UnixSignals", package: "swift-service-lifecycle", condition: serverOnly),
                .product(name: "Prometheus", package: "swift-prometheus", condition: serverOnly),
                .product(name: "Logging", package: "swift-log", condition: serverOnly),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: serverOnly),
                .product(name: "NIOCore", package: "swift-nio", condition: serverOnly),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: serverOnly),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras", condition: serverOnly),
            ],
            // The inspector page and the OpenAPI document, compiled into the binary (no resource
            // bundle to ship beside it).
            resources: [.embedInCode("Inspector/index.html"), .embedInCode("Inspector/inspector.css"),
                        .embedInCode("Inspector/inspector.js"), .embedInCode("Inspector/inspector-constants.js"),
                        .embedInCode("Inspector/inspector-state.js"), .embedInCode("Inspector/inspector-format.js"),
                        .embedInCode("Inspector/inspector-dom.js"), .embedInCode("Inspector/inspector-api.js"),
                        .embedInCode("Inspector/inspector-payload.js"), .embedInCode("Inspector/inspector-verdict.js"),
                        .embedInCode("Inspector/inspector-images.js"), .embedInCode("Inspector/inspector-platforms.js"),
                        .embedInCode("Inspector/inspector-waterfall.js"), .embedInCode("Inspector/inspector-card.js"),
                        .embedInCode("Inspector/inspector-lint.js"), .embedInCode("Inspector/inspector-result.js"),
                        .embedInCode("Inspector/inspector-service.js"), .embedInCode("Inspector/inspector-report.js"),
                        .embedInCode("OpenAPI/openapi.json")]
        ),
        .executableTarget(
            name: "attach-fetch",
            dependencies: [
                "AttachFetch", "AttachFetchRuntime", "AttachFetchService", "attach-fetch-decoder", "EncryptedContent",
                .product(name: "UnixSignals", package: "swift-service-lifecycle", condition: serverOnly),
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: serverOnly),
                .product(name: "Logging", package: "swift-log", condition: serverOnly),
            ]
        ),
        // libFuzzer target for sniff -> decode -> thumbnail on arbitrary bytes (scripts/fuzz.sh);
        // built normally it replays inputs given as files.
        .executableTarget(name: "attach-fetch-fuzz", dependencies: ["AttachFetch", "FuzzDriver"]),
        // What both fuzz targets' main does: libFuzzer's driver, or the replay of saved inputs.
        .target(name: "FuzzDriver"),
        // libFuzzer target for ContentDecoder on random keys, headers and chunkings
        // (scripts/fuzz-decoder.sh). The codec alone, so that it builds in seconds.
        .executableTarget(name: "content-decoder-fuzz", dependencies: ["EncryptedContent", "FuzzDriver"]),
        // Writes the docs' tables of reason codes from ReasonCode.contracts; Core's tests run it
        // with --check.
        .executableTarget(name: "contract-lists", dependencies: ["AttachFetchCore"]),
        // Writes openapi.json's paths from the service's route table and its descriptor schemas
        // from the descriptor's Codable definition; ContractListTests runs it with --check.
        .executableTarget(name: "openapi-document", dependencies: ["AttachFetchService", "AttachFetchCore"]),
        // One fixed batch through the pipeline, for the instruction-count guard
        // (Benchmarks/instruction-guard runs it under callgrind).
        .executableTarget(name: "instruction-count", dependencies: ["AttachFetch", "attach-fetch-decoder"]),
        // A small HTTP/1.1 origin on a loopback port for the tests, the demo and the benchmarks.
        .target(
            name: "LoopbackHTTPServer",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio", condition: serverOnly),
                .product(name: "NIOPosix", package: "swift-nio", condition: serverOnly),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: serverOnly),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio", condition: serverOnly),
            ],
            path: "Tests/LoopbackHTTPServer"
        ),
        // What the test targets share: a scratch directory, a thread off the pool, polling, a
        // clock the test moves, a loopback server of TestMedia and raw loopback sockets.
        .target(name: "TestHelpers", dependencies: ["AttachFetchCore", "LoopbackHTTPServer", "CRawSystemCall"], path: "Tests/TestHelpers"),
        // The service's test helpers: a server on loopback, HTTP exchanges checked against the
        // OpenAPI document, a caching origin, a captured log. For the service's tests and
        // the whole-pipeline tests that also talk to a service.
        .target(name: "ServiceTestHelpers",
                dependencies: ["AttachFetch", "AttachFetchCore", "AttachFetchService", "LoopbackHTTPServer", "TestHelpers",
                               .product(name: "Logging", package: "swift-log", condition: serverOnly)],
                path: "Tests/ServiceTestHelpers"),
        // A real S3 store for the tests (SeaweedFS on loopback, signatures checked), for the object
        // store's own tests and the pipeline's publishing and shared-result tests.
        .target(name: "ObjectStoreTestHelpers", dependencies: ["AttachFetchObjectStore", "TestHelpers"],
                path: "Tests/ObjectStoreTestHelpers"),
        // Serves TestMedia/ on a loopback port for the README's demo.
        .executableTarget(name: "loopback-media-server", dependencies: ["LoopbackHTTPServer"]),
        // A process's resident memory and its peak, for the tests and the check programs.
        .target(name: "ResidentMemory", path: "Tests/ResidentMemory"),
        // Test-only C wrappers for making large images at test time.
        // lcms2 comes with libvips-dev (liblcms2-dev), which libvips links.
        .target(name: "CTestSupport", dependencies: ["CVips"], path: "Tests/CTestSupport", linkerSettings: [.linkedLibrary("lcms2")]),
        // The corpus suite's independent readers (libvips, FFmpeg's demuxers): one process per batch.
        .executableTarget(name: "media-check", dependencies: ["CTestSupport", "CVips", "CFFmpeg"], path: "Tests/MediaCheck"),
        // A decoder worker taken over by a file, speaking the job protocol and lying, for
        // HostileWorkerTests: confined by the sandbox as a real worker is, it links no decoder.
        .executableTarget(name: "hostile-decoder", dependencies: ["AttachFetchCore", "AttachFetchDecoderProtocol", "DecoderSandbox", "CRawSystemCall"], path: "Tests/HostileDecoder"),
        // syscall(2) for the sandbox's checks (calls glibc has no wrapper for).
        .target(name: "CRawSystemCall", path: "Tests/CRawSystemCall"),
        // Confines itself as a decoder worker does and tries what a compromised decoder would,
        // for IsolationTests.
        .executableTarget(name: "filter-check", dependencies: ["AttachFetchDecoderProtocol", "DecoderSandbox", "CAttachFetchShims", "CRawSystemCall"], path: "Tests/FilterCheck"),
        // Runs the device's fetcher in a process of its own and reports its peak memory, for
        // AttachFetchDeviceTests (a test process's memory is shared with every test running).
        // The codec's primitives against published answers, through the public API: run by
        // AttachFetchDeviceTests, and by .ci/run once more built against swift-crypto.
        .executableTarget(name: "content-crypto-check", dependencies: ["EncryptedContent"], path: "Tests/ContentCryptoCheck"),
        .executableTarget(name: "device-fetch-check", dependencies: ["AttachFetchDevice", "EncryptedContent", "ResidentMemory"], path: "Tests/DeviceFetchCheck"),
        // Runs one long batch through the pipeline in a process of its own, under a cap on its
        // memory, for BatchMemoryTests (a test process's memory is shared with every test running).
        .executableTarget(name: "batch-memory-check", dependencies: ["AttachFetch", "attach-fetch-decoder", "ResidentMemory"], path: "Tests/BatchMemoryCheck"),
        // The device library, its codec and the deadline race over real loopback HTTP: a small
        // target that builds without the pipeline's C libraries.
        .testTarget(
            name: "AttachFetchDeviceTests",
            dependencies: ["AttachFetchDevice", "EncryptedContent", "DeadlineRace", "LoopbackHTTPServer", "device-fetch-check", "content-crypto-check"]
        ),
        // A test target per layer, each built with its layer's dependencies only: Core's build
        // and run without libcurl, libvips, FFmpeg or Hummingbird.
        .testTarget(name: "AttachFetchCoreTests", dependencies: ["AttachFetchCore", "TestHelpers", "contract-lists"]),
        .testTarget(name: "AttachFetchTransferTests", dependencies: ["AttachFetchTransfer", "AttachFetchCore", "AttachFetchRuntime", "CCurl", "LoopbackHTTPServer", "TestHelpers"]),
        .testTarget(name: "AttachFetchMediaTests", dependencies: ["AttachFetchMedia", "CFFmpeg", "CVips", "CVipsShims", "CTestSupport", "TestHelpers"]),
        .testTarget(name: "DecoderSandboxTests", dependencies: ["DecoderSandbox", "AttachFetchDecoderProtocol", "CAttachFetchShims"]),
        .testTarget(name: "AttachFetchRuntimeTests", dependencies: ["AttachFetchRuntime", "AttachFetchCore", "TestHelpers"]),
        .testTarget(name: "AttachFetchObjectStoreTests",
                    dependencies: ["AttachFetchObjectStore", "AttachFetchCore", "ObjectStoreTestHelpers", "TestHelpers",
                                   .product(name: "Logging", package: "swift-log", condition: serverOnly)]),
        .testTarget(name: "AttachFetchDecoderKeeperTests",
                    dependencies: ["AttachFetchDecoderKeeper", "AttachFetchDecoderProtocol", "AttachFetchCore", "TestHelpers"]),
        .testTarget(
            name: "AttachFetchServiceTests",
            dependencies: ["AttachFetchService", "AttachFetch", "ServiceTestHelpers", "TestHelpers", "attach-fetch", "attach-fetch-decoder",
                           .product(name: "Logging", package: "swift-log", condition: serverOnly),
                           .product(name: "NIOCore", package: "swift-nio", condition: serverOnly),
                           .product(name: "NIOEmbedded", package: "swift-nio", condition: serverOnly),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: serverOnly),
                           .product(name: "Hummingbird", package: "hummingbird", condition: serverOnly)]
        ),
        // The pipeline and the CLI end to end, and what needs every layer at once.
        .testTarget(
            name: "AttachFetchTests",
            dependencies: ["AttachFetch", "AttachFetchCore", "AttachFetchRuntime", "AttachFetchTransfer", "AttachFetchMedia", "AttachFetchDecoderKeeper", "AttachFetchService", "AttachFetchDevice", "EncryptedContent", "LoopbackHTTPServer", "ResidentMemory", "TestHelpers", "ServiceTestHelpers", "ObjectStoreTestHelpers", "CAttachFetchShims", "CVipsShims", "CCurl", "CVips", "CFFmpeg", "CTestSupport", "CRawSystemCall", "attach-fetch", "attach-fetch-fuzz", "attach-fetch-decoder", "openapi-document", "media-check", "batch-memory-check", "hostile-decoder", "filter-check",
                           .product(name: "Logging", package: "swift-log", condition: serverOnly)]
        ),
    ],
    swiftLanguageModes: [.v6]
)
