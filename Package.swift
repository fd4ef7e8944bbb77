// swift-tools-version: 6.2
import PackageDescription

/// Settings shared by every Spout target: Swift 6 language mode plus the upcoming
/// features that keep existentials explicit and imports honest.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "Spout",
    products: [
        .library(name: "Reactive", targets: ["Reactive"]),
        .library(name: "ReactiveNetworking", targets: ["ReactiveNetworking"]),
        .library(name: "Sequences", targets: ["Sequences"]),
        .library(name: "EventLoops", targets: ["EventLoops"]),
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
        .library(name: "RESP", targets: ["RESP"]),
        .library(name: "Redis", targets: ["Redis"]),
        .library(name: "OpenSSL", targets: ["OpenSSL"]),
        .library(name: "Spout", targets: ["Spout"]),
        .executable(name: "spout", targets: ["SpoutServer"]),
    ],
    targets: [
        // Layers, lowest first. Arrows point down only (see DESIGN.md).
        .target(name: "Reactive", swiftSettings: strictSettings, plugins: ["ReactiveArities"]),
        // Writes Reactive's fixed-arity merges (`Merge`, `Merge3`…`Merge8`) from one template at build time.
        .executableTarget(name: "GenerateArities", swiftSettings: strictSettings),
        .plugin(name: "ReactiveArities", capability: .buildTool(), dependencies: ["GenerateArities"]),
        // Combine's URLSession integration; its own module so that `Reactive` does not link FoundationNetworking.
        .target(name: "ReactiveNetworking", dependencies: ["Reactive"], swiftSettings: strictSettings),
        .target(name: "Sequences", dependencies: ["Reactive"], swiftSettings: strictSettings),
        // EventLoops: the event loops on threads of their own, epoll, non-blocking sockets, timers and syscalls;
        // what a protocol (HTTP/1.1, the Redis client, TLS next) builds on, as NIOPosix is to NIOHTTP1. Glibc and
        // Dispatch only.
        .target(name: "EventLoops", swiftSettings: strictSettings),
        .testTarget(
            name: "EventLoopsTests",
            dependencies: ["EventLoops", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .target(name: "HTTPServer", dependencies: ["EventLoops", "OpenSSL"], swiftSettings: strictSettings),
        .target(
            name: "Spout",
            dependencies: ["Reactive", "Sequences", "EventLoops", "HTTPServer", "RESP", "Redis", "OpenSSL"],
            // The browser client and the page, compiled in as byte arrays (`PackageResources`): no bundle at run time.
            resources: [
                .embedInCode("Client/spout.js"), .embedInCode("Client/spout.d.ts"), .embedInCode("Client/index.html"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "SpoutServer",
            dependencies: ["Spout", "Reactive", "OpenSSL"],
            swiftSettings: strictSettings
        ),

        // RESP: the Redis protocol as pure values, parser, command encoder and connection state machine; no
        // sockets, no Dispatch, standard library only. A socket transport on the event loops goes on top of it.
        .target(name: "RESP", swiftSettings: strictSettings),
        .testTarget(
            name: "RESPTests",
            dependencies: ["RESP", "Reactive", "TestSupport"],
            swiftSettings: strictSettings
        ),

        // Redis: the RESP connection state machine on non-blocking sockets driven by the event loops, with a small
        // typed API (streams, pub/sub) delivered as Reactive futures; `rediss://` through OpenSSL's TLSEngine. Below
        // the service, beside HTTPServer.
        .target(
            name: "Redis",
            dependencies: ["RESP", "EventLoops", "Reactive", "OpenSSL"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "RedisTests",
            dependencies: ["Redis", "RESP", "EventLoops", "Reactive", "OpenSSL", "TestSupport"],
            swiftSettings: strictSettings
        ),

        // OpenSSL: the system's OpenSSL 3 (libcrypto, libssl) loaded at run time, so that building needs only the
        // toolchain: signature verification for tokens, TLS for the server and the Redis client. Glibc only.
        .target(name: "OpenSSL", swiftSettings: strictSettings),
        .testTarget(name: "OpenSSLTests", dependencies: ["OpenSSL", "TestSupport"], swiftSettings: strictSettings),

        // Test helpers shared by the test targets: tracking subscriber, loopback client.
        .target(
            name: "TestSupport",
            dependencies: ["Reactive"],
            path: "Tests/TestSupport",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ReactiveTests",
            dependencies: ["Reactive", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ReactiveNetworkingTests",
            dependencies: ["ReactiveNetworking", "Reactive", "EventLoops", "HTTPServer", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SequencesTests",
            dependencies: ["Sequences", "Reactive", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: ["HTTPServer", "EventLoops", "OpenSSL", "TestSupport"],
            swiftSettings: strictSettings
        ),
        // The layering of docs/architecture.json, checked against Sources/ and this file (reads the checkout).
        .testTarget(name: "ArchitectureTests", swiftSettings: strictSettings),
        .testTarget(
            name: "SpoutTests",
            dependencies: [
                "Spout", "EventLoops", "HTTPServer", "Sequences", "Reactive", "ReactiveNetworking", "RESP", "Redis",
                "OpenSSL", "TestSupport",
            ],
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
