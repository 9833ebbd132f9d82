// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "pushtrack",
    products: [
        .executable(name: "pushtrack", targets: ["pushtrack"]),
        .executable(name: "pushtrack-sim", targets: ["pushtrack-sim"]),
        .executable(name: "pushtrack-emit", targets: ["pushtrack-emit"]),
        .library(name: "PushTrackClient", targets: ["PushTrackClient"]),
    ],
    targets: [
        // C bridges: a module map and a shim header each, nothing else.
        .systemLibrary(
            name: "CLibPQ", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),
        .systemLibrary(
            name: "CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(
            name: "CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(
            name: "CLibCrypto", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        // jemalloc, linked into the server's binary only: its malloc replaces the C library's.
        .systemLibrary(
            name: "CJemalloc", pkgConfig: "jemalloc",
            providers: [.apt(["libjemalloc-dev"])]),
        // The options that binary's jemalloc starts with (a C global it reads before main).
        .target(name: "JemallocOptions"),

        // The domain: event model, validation, dedup rules, report maths. No I/O; SHA-256 of
        // secrets through libcrypto, a digest and nothing else.
        .target(name: "PushTrackCore", dependencies: ["CLibCrypto"]),
        // Background threads started, stopped and joined one way (writers, pool, compactor…).
        .target(name: "Lifecycle"),
        // PostgreSQL over libpq.
        .target(name: "PostgresClient", dependencies: ["CLibPQ", "Lifecycle"]),
        // HTTP/1.1 over libmicrohttpd, and gzip bodies over zlib.
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "CZlib", "Lifecycle"]),
        // The application: configuration, migrations, ingestion, auth, routes.
        // The dashboard's pages, SVG charts, forms and cookie: rendering only, no I/O.
        .target(name: "Dashboard", dependencies: ["PushTrackCore"]),
        .target(
            name: "PushTrackServer",
            dependencies: [
                "PushTrackCore", "PostgresClient", "HTTPServer", "Dashboard", "Lifecycle",
            ]),
        .executableTarget(
            name: "pushtrack", dependencies: ["PushTrackServer", "CJemalloc", "JemallocOptions"]),
        // A blocking keep-alive HTTP/1.1 client over POSIX sockets (live tests, simulator).
        .target(name: "HTTPClient"),
        // Helpers shared by the live tests: throwaway databases and clusters.
        .target(name: "PushTrackTesting", dependencies: ["PostgresClient", "HTTPClient"]),

        // The apps' reporting half (README "Reporting from the apps"): Foundation only, so that
        // it builds for iOS and is tested here; and its command for scripts and other clients.
        .target(name: "PushTrackClient"),
        .executableTarget(name: "pushtrack-emit", dependencies: ["PushTrackClient"]),

        // The traffic simulator (loadtest/README.md): the seeded client model and its ground
        // truth (no I/O), the engine that sends it and checks the reports, and its command.
        .target(name: "Simulator", path: "loadtest/Simulator"),
        .target(
            name: "SimulatorEngine",
            dependencies: ["Simulator", "HTTPClient", "HTTPServer", "PushTrackCore"],
            path: "loadtest/SimulatorEngine"),
        .executableTarget(
            name: "pushtrack-sim", dependencies: ["SimulatorEngine"],
            path: "loadtest/pushtrack-sim"),

        .testTarget(
            name: "PushTrackCoreTests", dependencies: ["PushTrackCore", "Simulator"]),
        .testTarget(name: "LifecycleTests", dependencies: ["Lifecycle"]),
        .testTarget(name: "DashboardTests", dependencies: ["Dashboard", "PushTrackCore"]),
        .testTarget(name: "SimulatorTests", dependencies: ["Simulator"]),
        .testTarget(
            name: "SimulatorEngineTests",
            dependencies: ["SimulatorEngine", "PushTrackTesting", "HTTPClient"]),
        .testTarget(
            name: "PostgresClientTests", dependencies: ["PostgresClient", "PushTrackTesting"]),
        .testTarget(
            name: "HTTPServerTests", dependencies: ["HTTPServer", "HTTPClient", "Lifecycle"]),
        .testTarget(
            name: "PushTrackClientTests",
            // HTTPServer for its zlib inflater: the client's own gzip is checked against it.
            dependencies: [
                "PushTrackClient", "PushTrackTesting", "PostgresClient", "HTTPServer", "HTTPClient",
            ]),
        .testTarget(
            name: "PushTrackServerTests",
            dependencies: [
                "PushTrackServer", "PushTrackTesting", "PostgresClient", "HTTPClient", "Simulator",
            ],
            // Hostile-input case files, read from the source tree by HostileInputTests.
            exclude: ["Corpus"]),
    ]
)
