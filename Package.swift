// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "pushtrack",
    products: [
        .executable(name: "pushtrack", targets: ["pushtrack"])
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

        // The domain: event model, validation, dedup rules, report maths. No I/O.
        .target(name: "PushTrackCore"),
        // PostgreSQL over libpq.
        .target(name: "PostgresClient", dependencies: ["CLibPQ"]),
        // HTTP/1.1 over libmicrohttpd, and gzip bodies over zlib.
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "CZlib"]),
        // The application: configuration, migrations, ingestion, auth, routes.
        // The dashboard's pages, SVG charts, forms and cookie: rendering only, no I/O.
        .target(name: "Dashboard", dependencies: ["PushTrackCore"]),
        .target(
            name: "PushTrackServer",
            dependencies: ["PushTrackCore", "PostgresClient", "HTTPServer", "Dashboard"]),
        .executableTarget(name: "pushtrack", dependencies: ["PushTrackServer"]),
        // Helpers shared by the live tests: a raw-socket HTTP client, database fixtures.
        .target(name: "PushTrackTesting", dependencies: ["PostgresClient"]),

        .testTarget(name: "PushTrackCoreTests", dependencies: ["PushTrackCore"]),
        .testTarget(name: "DashboardTests", dependencies: ["Dashboard", "PushTrackCore"]),
        .testTarget(
            name: "PostgresClientTests", dependencies: ["PostgresClient", "PushTrackTesting"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "PushTrackTesting"]),
        .testTarget(
            name: "PushTrackServerTests",
            dependencies: ["PushTrackServer", "PushTrackTesting", "PostgresClient"],
            // Hostile-input case files, read from the source tree by HostileInputTests.
            exclude: ["Corpus"]),
    ]
)
