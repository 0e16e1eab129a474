// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Vigil",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "vigil", targets: ["vigil"]),
        .library(name: "Media", targets: ["Media"]),
        .library(name: "Capture", targets: ["Capture"]),
        .library(name: "Recorder", targets: ["Recorder"]),
        .library(name: "CaptureTesting", targets: ["CaptureTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.14.0"),
        // `vigil run` and `vigil demo` are a ServiceGroup: one run() per service, graceful shutdown on SIGTERM.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // Errno: errors carry the system's error code as a value, not as text.
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        // The web server (issue 14): only the `WebServer` target, `vigil` and their tests build it.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        // Live view's fMP4 stream (WebSocket upgrade on the same router).
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // Already under Hummingbird: named here because the web server's connection limits are
        // channel handlers (NIO's channel pipeline, HTTP/1 parser errors, HTTP parts).
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.24.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // The S3 archive's HTTP client (issue 29): pooled, streamed bodies, timeouts; already built for HummingbirdTesting.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // SHA-256 and HMAC for S3 checksums and Signature Version 4 (BoringSSL's SHA-NI code on Linux).
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        // The cluster catalogue in PostgreSQL (issue 30): pooled connections, bound parameters.
        // Only the `Cluster` target and its tests build it; its dependencies are already above.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // C shim over FFmpeg: error macros, AV_NOPTS_VALUE and other things Swift cannot import.
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat libavcodec libswscale libavutil",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libswscale-dev", "libavutil-dev"])]
        ),
        // The recordings index: SQLite's C API (a real file; no ORM to compile on every CI run).
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // C shim over the kernel's V4L2 API: ioctl numbers, a non-variadic ioctl, packed structs.
        .target(name: "CV4L2"),
        // posix_spawn's close-from file action, for hooks that must not inherit the recorder's descriptors.
        .target(name: "CSpawn"),
        // Arithmetic on outside values that returns nil instead of trapping; time-unit changes.
        .target(name: "CheckedMath"),
        // The process's plumbing, below everything that runs: the system clocks, threads for
        // blocking work (`BlockingIO`), how a service sleeps (`Wakeup`), the console's writer.
        .target(name: "Plumbing", dependencies: [.product(name: "Logging", package: "swift-log")]),
        // Vigil's RTSP library: what a camera sends, parsed by pure, bounded, fuzzed functions
        // (answers, SDP, authentication, interleaved framing, RTP, depacketizing, decode times).
        // No C and no FFmpeg below it, so the fuzz targets (Fuzz/) compile it alone.
        .target(name: "RTSP"),
        .target(name: "Media", dependencies: [
            "CFFmpeg", .product(name: "SystemPackage", package: "swift-system"),
        ]),
        .target(name: "Capture", dependencies: [
            "Media", "CV4L2", "RTSP", "CheckedMath", "Plumbing",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        .target(name: "Recorder", dependencies: [
            "Capture", "Media", "CSQLite", "CSpawn", "CheckedMath", "Plumbing",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        // The HTTP server of `vigil run`/`demo`: API, files, clips, metrics (and live view, the page).
        .target(name: "WebServer", dependencies: [
            "Recorder", "Capture", "Media", "CheckedMath", "Plumbing", "Archive", "S3", "Access", "Cluster",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], resources: [.copy("Page")]),
        // An S3-compatible client (issue 29): SigV4 signing, the S3 calls and their XML. Free of
        // Recorder, so it builds and tests alone.
        .target(name: "S3", dependencies: [
            "CheckedMath",
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // `[archive]`: the upload queue's worker, reading archived files back, rebuilding the index from the bucket.
        .target(name: "Archive", dependencies: [
            "S3", "Recorder", "Capture", "CheckedMath", "Plumbing",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // Who may use the web server (issue 39): users and roles, API tokens, sessions, the audit
        // trail; scrypt from CryptoExtras (already built for postgres-nio's SCRAM).
        .target(name: "Access", dependencies: [
            "Recorder", "CheckedMath", "Plumbing",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "CryptoExtras", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // `[cluster]` (issue 30): the recordings catalogue in PostgreSQL, shared by several nodes.
        // Recorder stays free of PostgresNIO; this target adapts it.
        .target(name: "Cluster", dependencies: [
            "Recorder", "Plumbing",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        .executableTarget(name: "vigil", dependencies: [
            "Recorder", "Capture", "Media", "WebServer", "Archive", "Cluster", "S3", "CheckedMath", "Access", "Plumbing",
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Servers/: the RTSP, MJPEG, S3 fault-proxy and TCP proxy test servers, run by /usr/bin/python3 from their place here.
        // S3: S3TestServer hands out the S3Keys of the moto server it starts.
        .target(name: "CaptureTesting", dependencies: ["Capture", "Media", "CV4L2", "S3", "Plumbing"], exclude: ["Servers"]),
        // Benchmarks that need the emulated V4L2 device (Scripts/bench-v4l2).
        .executableTarget(name: "vigil-bench", dependencies: ["Capture", "CaptureTesting", "Media", "Recorder", "Cluster", "Plumbing"]),
        .testTarget(name: "ArchiveTests", dependencies: [
            "Archive", "S3", "Recorder", "CaptureTesting", .product(name: "Logging", package: "swift-log"),
            .product(name: "Crypto", package: "swift-crypto"), .product(name: "NIOCore", package: "swift-nio"),
        ]),
        .testTarget(name: "S3Tests", dependencies: [
            "S3", "CaptureTesting",
            // Fetches presigned URLs as a browser would, without the client under test.
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        // The catalogue contract on both back ends (SQLite, and PostgreSQL started by TestPostgres).
        .testTarget(name: "ClusterTests", dependencies: [
            "Cluster", "Recorder", "Plumbing", "CaptureTesting", .product(name: "PostgresNIO", package: "postgres-nio"),
        ]),
        .testTarget(name: "RTSPTests", dependencies: ["RTSP", "CheckedMath"]),
        .testTarget(name: "PlumbingTests", dependencies: ["Plumbing", "CaptureTesting"]),
        .testTarget(name: "MediaTests", dependencies: ["Media", "CaptureTesting"]),
        .testTarget(name: "CaptureTests", dependencies: [
            "Capture", "Media", "Plumbing", "CaptureTesting", "CV4L2", "RTSP", .product(name: "SystemPackage", package: "swift-system"),
        ]),
        .testTarget(name: "RecorderTests", dependencies: [
            "Recorder", "Capture", "Plumbing", "CaptureTesting", .product(name: "Logging", package: "swift-log"),
            .product(name: "SystemPackage", package: "swift-system"),
        ]),
        .testTarget(name: "WebServerTests", dependencies: [
            "WebServer", "Access", "Recorder", "Capture", "Plumbing", "CaptureTesting", "Media",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "HummingbirdWSTesting", package: "hummingbird-websocket"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        // Browser/: the page's check in headless Chromium, run by /usr/bin/python3 from its place here.
        .testTarget(name: "VigilEndToEndTests", dependencies: ["CaptureTesting", "Media", "Plumbing", "Recorder", "vigil"], exclude: ["Browser"]),
    ],
    swiftLanguageModes: [.v6]
)
