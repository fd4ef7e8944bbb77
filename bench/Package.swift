// swift-tools-version: 6.0
import PackageDescription

/// The benchmarks, in a package of their own: they depend on the Spout package by path, as a
/// user's package would, so they see only its public API (and measure the library across the
/// package boundary, where only `@inlinable` code specializes). `swift build` / `swift test` at
/// the root build none of this. Release builds only: `swift run -c release --package-path bench …`.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "SpoutBench",
    products: [
        .executable(name: "http-bench-server", targets: ["HTTPServerBench"]),
        .executable(name: "sequences-bench", targets: ["SequencesBench"]),
        .executable(name: "reactive-bench", targets: ["ReactiveBench"]),
        .executable(name: "upstream-cancel-stress", targets: ["UpstreamCancelStress"]),
        .executable(name: "redis-bench", targets: ["RedisBench"]),
        .executable(name: "jwt-bench", targets: ["JWTBench"]),
    ],
    dependencies: [
        .package(name: "Spout", path: "..")
    ],
    targets: [
        // The server of bench/http_rps.sh: HTTPServer alone, no service layer.
        .executableTarget(
            name: "HTTPServerBench",
            dependencies: [
                .product(name: "EventLoops", package: "Spout"),
                .product(name: "HTTPServer", package: "Spout"),
            ],
            path: "HTTPServerBench",
            swiftSettings: strictSettings
        ),
        // Cost per sequence element.
        .executableTarget(
            name: "SequencesBench",
            dependencies: [
                .product(name: "Sequences", package: "Spout"),
                .product(name: "Reactive", package: "Spout"),
            ],
            path: "SequencesBench",
            swiftSettings: strictSettings
        ),
        // ns per element through Reactive pipelines (bench/reactive.sh).
        .executableTarget(
            name: "ReactiveBench",
            dependencies: [.product(name: "Reactive", package: "Spout")],
            path: "ReactiveBench",
            swiftSettings: strictSettings
        ),
        // Cancelling data tasks around their completion (UpstreamCancelStress/main.swift).
        .executableTarget(
            name: "UpstreamCancelStress",
            dependencies: [
                .product(name: "ReactiveNetworking", package: "Spout"),
                .product(name: "Reactive", package: "Spout"),
            ],
            path: "UpstreamCancelStress",
            swiftSettings: strictSettings
        ),
        // Pipelined round trips through the Redis client (bench/redis.sh sets them beside redis-benchmark).
        .executableTarget(
            name: "RedisBench",
            dependencies: [
                .product(name: "Redis", package: "Spout"),
                .product(name: "RESP", package: "Spout"),
                .product(name: "EventLoops", package: "Spout"),
                .product(name: "Reactive", package: "Spout"),
            ],
            path: "RedisBench",
            swiftSettings: strictSettings
        ),
        // JWT verification through Spout's public SignedTokenVerifier, cold and cached (bench/jwt.sh sets it beside
        // PyJWT and `openssl speed`).
        .executableTarget(
            name: "JWTBench",
            dependencies: [.product(name: "Spout", package: "Spout")],
            path: "JWTBench",
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
