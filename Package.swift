// swift-tools-version: 6.0
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
        .library(name: "Sequences", targets: ["Sequences"]),
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
        .library(name: "Spout", targets: ["Spout"]),
        .executable(name: "spout", targets: ["SpoutServer"]),
        .executable(name: "http-bench-server", targets: ["HTTPServerBench"]),
        .executable(name: "reactive-bench", targets: ["ReactiveBench"]),
        .executable(name: "upstream-cancel-stress", targets: ["UpstreamCancelStress"]),
    ],
    targets: [
        // Layers, lowest first. Arrows point down only (see DESIGN.md).
        .target(name: "Reactive", swiftSettings: strictSettings),
        .target(name: "Sequences", dependencies: ["Reactive"], swiftSettings: strictSettings),
        .target(name: "HTTPServer", swiftSettings: strictSettings),
        .target(
            name: "Spout",
            dependencies: ["Reactive", "Sequences", "HTTPServer"],
            swiftSettings: strictSettings
        ),
        .executableTarget(name: "SpoutServer", dependencies: ["Spout"], swiftSettings: strictSettings),

        // RESP: the Redis protocol as pure values, parser, command encoder and connection state machine; no
        // sockets, no Dispatch, standard library only. A socket transport on the event loops goes on top of it.
        .target(name: "RESP", swiftSettings: strictSettings),
        .testTarget(name: "RESPTests", dependencies: ["RESP", "TestSupport"], swiftSettings: strictSettings),

        // Benchmark server for bench/http_rps.sh: HTTPServer alone, no service layer.
        .executableTarget(
            name: "HTTPServerBench",
            dependencies: ["HTTPServer"],
            path: "bench/HTTPServerBench",
            swiftSettings: strictSettings
        ),
        // Benchmarks: release builds only (`swift run -c release sequences-bench`), never run as tests.
        .executableTarget(
            name: "sequences-bench",
            dependencies: ["Sequences", "Reactive"],
            path: "bench/SequencesBench",
            swiftSettings: strictSettings
        ),

        .executableTarget(
            name: "ReactiveBench",
            dependencies: ["Reactive"],
            path: "bench/ReactiveBench",
            swiftSettings: strictSettings
        ),

        // Stress for cancelling data tasks around their completion (bench/UpstreamCancelStress/main.swift).
        .executableTarget(
            name: "UpstreamCancelStress",
            dependencies: ["Spout", "Reactive"],
            path: "bench/UpstreamCancelStress",
            swiftSettings: strictSettings
        ),

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
            name: "SequencesTests",
            dependencies: ["Sequences", "Reactive", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: ["HTTPServer", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SpoutTests",
            dependencies: ["Spout", "HTTPServer", "Sequences", "Reactive", "TestSupport"],
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
