// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "tracer",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tracer", targets: ["tracer"]),
        .executable(name: "tracer-bench", targets: ["tracer-bench"]),
    ],
    traits: [
        .trait(
            name: "PostgreSQL",
            description:
                "The store on PostgreSQL for a site's servers (libpq). A kiosk's build can leave it out: swift build --disable-default-traits"
        ),
        .default(enabledTraits: ["PostgreSQL"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams", exact: "6.2.2"),
        // The admin HTTP API. Its swift-configuration support is left off (tracer has its flags).
        .package(
            url: "https://github.com/hummingbird-project/hummingbird",
            exact: "2.28.1",
            traits: ["FullFoundation"]
        ),
        // SHA-256 and HMAC (already in the graph through Hummingbird's and AsyncHTTPClient's TLS).
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        // Signed health certificates: the trust list's X.509 certificates (their public keys,
        // validity and subjects) and PEM.
        .package(url: "https://github.com/apple/swift-certificates", exact: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", exact: "1.7.4"),
        // Declared for the products tracer imports from them directly (all in Hummingbird's graph).
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        // NIOHTTPTypes: the server's own channel handlers see HTTPTypes' request parts.
        .package(url: "https://github.com/apple/swift-nio-extras", exact: "1.35.2"),
        // Outgoing HTTP(S): the webhook (and the kiosks' replication to come).
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        // Every long-running part is a Service, run in one ServiceGroup.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        // Counters and gauges, exported in Prometheus's format on /metrics.
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
        .package(url: "https://github.com/apple/swift-http-types", exact: "1.8.0"),
        // Report uploads (multipart/form-data).
        .package(url: "https://github.com/vapor/multipart-kit", exact: "4.7.1"),
        // The API's client, generated from its OpenAPI document at build time (BENCHMARKS.md,
        // "Build: swift-openapi-generator"), and its transport over AsyncHTTPClient.
        .package(url: "https://github.com/apple/swift-openapi-generator", exact: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", exact: "1.13.4"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client", exact: "1.5.0"),
        // The server's routes as the generated APIProtocol, on Hummingbird's router (one file:
        // Router as the runtime's ServerTransport).
        .package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird", exact: "2.1.0"),
    ],
    targets: [
        // C libraries: a module map and a shim each, nothing else.
        .systemLibrary(
            name: "CTracerSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),

        // libpq, for the store on PostgreSQL (synchronous, like SQLite's API: docs/postgresql.md).
        .systemLibrary(
            name: "CTracerPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),

        .systemLibrary(
            name: "CTracerDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),

        .systemLibrary(
            name: "CTracerSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),

        .systemLibrary(
            name: "CTracerTesseract",
            pkgConfig: "tesseract",
            providers: [.apt(["libtesseract-dev", "libleptonica-dev"])]
        ),

        // The verification policy for photographed test results, with no I/O.
        .target(name: "TracerVerification", resources: [.embedInCode("Resources/rule-texts.json")]),

        // Tesseract OCR: images checked before decoding, words with confidences and boxes; the
        // server's fixed pool of engines on NIOThreadPool, with a bounded queue.
        .target(
            name: "TracerOCR",
            dependencies: [
                "CTracerTesseract", "CTracerZBar", "TracerVerification",
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),

        // QR codes in an image (a signed health certificate's), with ZBar.
        .systemLibrary(
            name: "CTracerZBar",
            pkgConfig: "zbar",
            providers: [.apt(["libzbar-dev"])]
        ),

        // libqrencode: the QR code of a person's link, for the badge's card.
        .systemLibrary(
            name: "CTracerQREncode",
            pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"])]
        ),

        // What a site prints on a badge's card: the QR code of the person's link, as a PNG.
        .target(name: "TracerCards", dependencies: ["CTracerQREncode", "CTracerZlib"]),

        .systemLibrary(
            name: "CTracerZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),

        // Signed EU Digital COVID Certificates: Base45, zlib, COSE_Sign1 over CBOR, ES256 and
        // PS256 checked against the site's trust list, and the decision on the test they carry.
        .target(
            name: "TracerCertificate",
            dependencies: [
                "TracerVerification", "CTracerZlib",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),

        // Badges nobody outside the site can follow: rotating iBeacon ids (HKDF-SHA256 keys,
        // AES-128 per epoch, docs/design.md) and the kiosk's table that resolves them.
        .target(
            name: "TracerBadges",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),

        // The data model: DESIGN.md's documents as types (interactions, beacons, reports, device
        // statuses, exposures, tokens), their statuses, the paths to them, and the one list of
        // indexes the product declares. No other module spells a collection name.
        .target(
            name: "TracerModel",
            dependencies: [
                "TracerStore", "TracerRanging", "TracerSite", "TracerBadges",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),

        // The co-location rule, with no I/O: windows in, episodes out (runs, hits, room
        // attribution, episodes), and the exposure policy with the rooms' geometry.
        .target(name: "TracerColocation", dependencies: ["TracerSite", "TracerRanging"]),

        // Self-reports: one path for the command and the API (verify under the site's policy,
        // find the reporter, record, flag); the report stored never holds the image.
        .target(
            name: "TracerReports",
            dependencies: [
                "TracerStore", "TracerModel", "TracerRanging", "TracerSite", "TracerVerification", "TracerCertificate",
            ]
        ),

        // The exposure engine (the co-location rule over the store, and what it writes); the
        // flagger and the notifier as Services; webhooks over HTTP(S) with AsyncHTTPClient.
        .target(
            name: "TracerExposure",
            dependencies: [
                "TracerStore", "TracerModel", "TracerColocation", "TracerReports", "TracerSite",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // D-Bus over libdbus-1: connections, calls, and the values BlueZ uses.
        .target(name: "TracerDBus", dependencies: ["CTracerDBus"]),

        // The HTTP API's contract as types: generated from its OpenAPI document (openapi.yaml here is
        // TracerServer's Resources/openapi.yaml, linked) once, for the server that answers with them
        // and the client that reads them; made from the stored documents, written as JSON
        // (`APIJSON`); and the sync wire format. No I/O.
        .target(
            name: "TracerAPI",
            dependencies: [
                "TracerStore", "TracerModel", "TracerVerification",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),

        // Kiosk → site server: the kiosk's replicator, and the one HTTP client every kiosk and
        // `--server` command talks to the site with (`Upstream`, AsyncHTTPClient), the API's
        // client generated from its OpenAPI document on it (`SiteClient`, swift-openapi-async-http-client).
        .target(
            name: "TracerReplication",
            dependencies: [
                "TracerStore", "TracerModel", "TracerAPI", "TracerBadges",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),

        // The Firestore-like document store: the engine (paths, values, writes, queries, indexes,
        // listeners) and its SQLite backend.
        .target(
            name: "TracerStore",
            dependencies: [
                "CTracerSQLite",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),

        // The store's PostgreSQL backend (libpq), for a site's servers: opened through
        // `DocumentStore(path: "postgres://…")` once `PostgresBackend.enable()` has run.
        .target(
            name: "TracerStorePostgres",
            dependencies: ["TracerStore", "CTracerPQ"]
        ),

        // Ranging, with no I/O: iBeacon frames, RSSI filters, distance, proximity, windows.
        .target(name: "TracerRanging"),

        // Sites: the BeaconMap files.
        .target(
            name: "TracerSite",
            dependencies: ["TracerRanging", .product(name: "Yams", package: "Yams")]
        ),

        // The kiosk daemon: advert sources (BlueZ as a state machine and its bus session, replays),
        // attribution, interaction documents into the store; its Services and metrics.
        .target(
            name: "TracerDaemon",
            dependencies: [
                "TracerRanging", "TracerSite", "TracerStore", "TracerModel", "TracerBadges", "TracerDBus",
                "CTracerSystemd",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // The simulator: people moving about a site, the adverts its kiosks hear, the truth;
        // and the evaluation of what tracer flagged against that truth.
        .target(
            name: "TracerSimulation",
            dependencies: [
                "TracerSite", "TracerRanging", "TracerBadges", .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),

        // The admin HTTP API and the dashboard (`tracer serve`): tokens, routes as Codable
        // responses, Server-Sent Events; and `/metrics` (swift-prometheus) for the daemon.
        .target(
            name: "TracerServer",
            dependencies: [
                "TracerStore", "TracerModel", "TracerColocation", "TracerSite", "TracerExposure", "TracerReports",
                "TracerOCR", "TracerVerification", "TracerAPI", "TracerCertificate", "TracerBadges",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "MultipartKit", package: "multipart-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird"),
                .product(name: "Yams", package: "Yams"),
            ],
            // The dashboard page and the API's OpenAPI document, embedded in the binary (one file
            // to install).
            resources: [
                .embedInCode("Resources/dashboard.html"), .embedInCode("Resources/dashboard-texts.json"),
                .embedInCode("Resources/openapi.yaml"),
                .embedInCode("Resources/person.html"), .embedInCode("Resources/person-texts.json"),
                .embedInCode("Resources/person-sw.js"),
                .embedInCode("Resources/person-icon.svg"), .embedInCode("Resources/person-icon-192.png"),
                .embedInCode("Resources/person-icon-512.png"),
            ],
            // The routes' registration for the generated APIProtocol (API+Operations.swift).
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),

        // The command line: thin commands that parse and hand over; long-running ones run their
        // Services in one ServiceGroup.
        .executableTarget(
            name: "tracer",
            dependencies: [
                "TracerAPI",
                "TracerCards",
                "TracerStore",
                .target(name: "TracerStorePostgres", condition: .when(traits: ["PostgreSQL"])),
                "TracerModel",
                "TracerColocation",
                "TracerRanging",
                "TracerSite",
                "TracerDaemon",
                "TracerVerification",
                "TracerOCR",
                "TracerReports",
                "TracerCertificate",
                "TracerExposure",
                "TracerSimulation",
                "TracerServer",
                "TracerReplication",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ]
        ),

        // The benchmarks (`tracer-bench store|ranging|exposure|ocr`), a program of their own that
        // Tools/bench/* build in release mode and run: the store against plain SQLite (the baseline
        // on the sqlite3 C API directly) or plain libpq, ranging, flagging, OCR. Nothing of it is in `tracer`.
        .executableTarget(
            name: "tracer-bench",
            dependencies: [
                "TracerAPI",
                "CTracerSQLite", "CTracerPQ", "TracerStore", "TracerStorePostgres", "TracerModel", "TracerColocation",
                "TracerRanging", "TracerSite", "TracerDaemon", "TracerExposure", "TracerReplication",
                "TracerOCR", "TracerVerification", "TracerBadges", "TracerSimulation",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                // `campus send`: 500 kiosks' batches, each with its own token, on one client.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),

        // Helpers for tests: temporary stores, private buses, the built binary, child processes,
        // a certificate authority made with openssl.
        .target(
            name: "TracerTesting",
            dependencies: [
                "TracerStore", "TracerStorePostgres", "TracerDBus", "TracerModel",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),

        .testTarget(
            name: "TracerStoreTests",
            dependencies: ["TracerStore", "TracerStorePostgres", "TracerTesting"]
        ),
        .testTarget(
            name: "TracerRangingTests",
            dependencies: ["TracerRanging", "TracerSite", "TracerTesting"]
        ),
        .testTarget(
            name: "TracerDaemonTests",
            dependencies: [
                "TracerDaemon", "TracerBadges", "TracerDBus", "TracerModel", "TracerSimulation", "TracerTesting",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TracerDBusTests",
            dependencies: ["TracerDBus", "TracerTesting"]
        ),
        .testTarget(name: "TracerBadgesTests", dependencies: ["TracerBadges", "TracerTesting"]),
        .testTarget(
            name: "TracerVerificationTests",
            dependencies: [
                "TracerVerification", "TracerOCR", "TracerReports", "TracerModel", "TracerTesting", "TracerCertificate",
                "TracerSite",
            ]
        ),
        .testTarget(
            name: "TracerExposureTests",
            dependencies: [
                "TracerExposure", "TracerColocation", "TracerModel", "TracerReports", "TracerVerification",
                "TracerSite", "TracerAPI",
                "TracerTesting",
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "TracerModelTests",
            dependencies: ["TracerModel", "TracerBadges", "TracerSite", "TracerStore", "TracerTesting"]
        ),
        .testTarget(
            name: "TracerColocationTests",
            dependencies: ["TracerColocation", "TracerSite"]
        ),
        .testTarget(
            name: "TracerSimulationTests",
            dependencies: ["TracerSimulation", "TracerSite", "TracerRanging", "TracerBadges", "TracerTesting"]
        ),
        .testTarget(
            name: "TracerServerTests",
            dependencies: [
                "TracerAPI",
                "TracerServer", "TracerStore", "TracerModel", "TracerColocation", "TracerSite", "TracerOCR",
                "TracerReplication", "TracerReports", "TracerCertificate", "TracerRanging",
                "TracerTesting",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        .testTarget(
            name: "TracerAPITests",
            dependencies: ["TracerAPI", "TracerStore"]
        ),
        .testTarget(
            name: "TracerReplicationTests",
            dependencies: [
                "TracerReplication", "TracerAPI", "TracerStore", "TracerModel", "TracerBadges", "TracerTesting",
            ]
        ),
        .testTarget(
            name: "TracerCardsTests",
            dependencies: ["TracerCards", "TracerOCR", "TracerTesting"]
        ),
        .testTarget(
            name: "TracerCLITests",
            dependencies: [
                "TracerAPI", "TracerReplication", "tracer", "TracerBadges", "TracerDBus", "TracerModel", "TracerStore",
                "TracerOCR", "TracerTesting",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
