// swift-tools-version:6.1
// A separate package (as swift-nio does) so that users of attach-fetch never build the
// benchmark harness. Run from this directory: swift package benchmark
import PackageDescription

let package = Package(
    name: "attach-fetch-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "attach-fetch", path: "../"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // attach-fetch's test origin, built from its sources: it is test support, not a product.
        .target(
            name: "LoopbackHTTPServer",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Sources/LoopbackHTTPServer"
        ),
        .executableTarget(
            name: "PipelineBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "AttachFetch", package: "attach-fetch"),
                "LoopbackHTTPServer",
                // Built beside the benchmark: the pipeline's decoder worker processes.
                .product(name: "attach-fetch-decoder", package: "attach-fetch"),
            ],
            path: "Benchmarks/PipelineBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Deadline overshoot and timeout precision, as percentiles over many batches.
        // swift run -c release DeadlineOvershoot
        .executableTarget(
            name: "DeadlineOvershoot",
            dependencies: [
                .product(name: "AttachFetch", package: "attach-fetch"),
                "LoopbackHTTPServer",
                .product(name: "attach-fetch-decoder", package: "attach-fetch"),
            ],
            path: "Sources/DeadlineOvershoot"
        ),
        // The campaign fan-out, cache on against cache off.   swift run -c release FanOut
        .executableTarget(
            name: "FanOut",
            dependencies: [
                .product(name: "AttachFetch", package: "attach-fetch"),
                "LoopbackHTTPServer",
                .product(name: "attach-fetch-decoder", package: "attach-fetch"),
            ],
            path: "Sources/FanOut"
        ),
        // The content codec's throughput on its crypto backend (Benchmarks/content-codec).
        .executableTarget(
            name: "ContentCodecThroughput",
            dependencies: [.product(name: "AttachFetchDevice", package: "attach-fetch")],
            path: "Sources/ContentCodecThroughput"
        ),
        // 10,000 requests queued at once over 8 transfer slots.   swift run -c release TransferQueueLoad
        .executableTarget(
            name: "TransferQueueLoad",
            dependencies: [
                .product(name: "AttachFetch", package: "attach-fetch"),
                "LoopbackHTTPServer",
                .product(name: "attach-fetch-decoder", package: "attach-fetch"),
            ],
            path: "Sources/TransferQueueLoad"
        ),
    ]
)
