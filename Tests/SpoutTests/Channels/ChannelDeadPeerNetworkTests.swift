import Foundation
import Glibc
import TestSupport
import Testing

@testable import Spout

/// A pair of network namespaces' worth of network for one test: a namespace of its own joined to this one by a
/// veth pair (`10.213.<n>.1` here, `.2` there), so that a peer in it can vanish without a FIN: bringing its end of
/// the pair down drops, silently, every segment the server sends it (nothing acknowledges them, nothing resets).
/// Loopback cannot do this: the kernel acknowledges for any live socket, and a closed one answers with a reset.
///
/// Needs root (`CAP_SYS_ADMIN`, `CAP_NET_ADMIN`) and `ip` (iproute2): ``isAvailable`` says whether this machine
/// can; CI sets `SPOUT_REQUIRE_NETNS=1` so that the tests fail there rather than skip.
///
/// **Ownership:** the test makes it and calls ``remove()``. **Thread safety:** one test's own.
final class VethNamespace {
    let name: String
    let hostAddress: String
    let peerAddress: String
    private let hostLink: String
    private let peerLink: String

    static let ipPaths = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
    static var ip: String? { ipPaths.first { FileManager.default.isExecutableFile(atPath: $0) } }

    /// Whether the tests must run and fail rather than be skipped (CI sets `SPOUT_REQUIRE_NETNS=1`).
    static var isRequired: Bool { ProcessInfo.processInfo.environment["SPOUT_REQUIRE_NETNS"] == "1" }

    /// Root and `ip` are there (whether namespaces may be made shows when one is).
    static var isAvailable: Bool { getuid() == 0 && ip != nil }

    static var testsEnabled: Bool { isRequired || isAvailable }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init() throws {
        let tag = String(UInt32.random(in: 0..<1_000_000), radix: 36)
        name = "spout-dp-\(getpid())-\(tag)"
        hostLink = "spA\(tag)"
        peerLink = "spB\(tag)"
        let subnet = Int.random(in: 1...250)
        hostAddress = "10.213.\(subnet).1"
        peerAddress = "10.213.\(subnet).2"
        try Self.run(["netns", "add", name])
        do {
            try Self.run(["link", "add", hostLink, "type", "veth", "peer", "name", peerLink])
            try Self.run(["link", "set", peerLink, "netns", name])
            try Self.run(["addr", "add", "\(hostAddress)/30", "dev", hostLink])
            try Self.run(["link", "set", hostLink, "up"])
            try Self.run(["-n", name, "addr", "add", "\(peerAddress)/30", "dev", peerLink])
            try Self.run(["-n", name, "link", "set", peerLink, "up"])
            try Self.run(["-n", name, "link", "set", "lo", "up"])
        } catch {
            remove()
            throw error
        }
    }

    /// The peer's end goes down: what is sent to the namespace is dropped from now on, without a word.
    func cutPeer() throws {
        try Self.run(["-n", name, "link", "set", peerLink, "down"])
    }

    /// Deletes the namespace (and with it the pair).
    func remove() {
        try? Self.run(["link", "del", hostLink])
        try? Self.run(["netns", "del", name])
    }

    /// A TCP connection from inside the namespace to `host:port`: the socket is made on a thread that entered
    /// the namespace (`setns` changes only the calling thread's), and stays in it.
    func connect(to host: String, port: Int) throws -> LoopbackClient {
        // Written by the thread before it signals `done`, read after the wait: the signal orders the two.
        nonisolated(unsafe) var result: Result<LoopbackClient, any Error>?
        let done = TestSignal()
        let path = "/run/netns/\(name)"
        Thread {
            defer { done.signal() }
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0, Self.enterNetworkNamespace(fd) else {
                if fd >= 0 { close(fd) }
                result = .failure(Failure(description: "setns \(path): errno \(errno)"))
                return
            }
            close(fd)
            result = Result { () throws -> LoopbackClient in try LoopbackClient(port: port, host: host) }
        }.start()
        guard done.wait(timeout: .seconds(10)), let outcome = result else {
            throw Failure(description: "the namespace's connection did not come")
        }
        return try outcome.get()
    }

    /// `setns(fd, CLONE_NEWNET)` through the C library (Glibc's Swift module does not export it).
    private static func enterNetworkNamespace(_ fd: Int32) -> Bool {
        typealias SetNS = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(nil, "setns") else { return false }
        let cloneNewNet: Int32 = 0x4000_0000
        return unsafeBitCast(symbol, to: SetNS.self)(fd, cloneNewNet) == 0
    }

    /// Runs `ip arguments`; throws with its output when it fails.
    private static func run(_ arguments: [String]) throws {
        guard let ip else { throw Failure(description: "no ip command") }
        let child = try ChildProcess(executable: ip, arguments: arguments, standardError: .standardOutput)
        let output = (try? child.readStandardOutput(timeout: .seconds(10))) ?? []
        guard let ended = child.wait(timeout: .seconds(10)), ended.exitStatus == 0 else {
            _ = child.kill()
            let text = String(decoding: output, as: UTF8.self)
            throw Failure(description: "ip \(arguments.joined(separator: " ")): \(text)")
        }
    }
}

/// `channels.deadPeerSeconds` in practice: a subscriber whose peer vanished without a FIN, with heartbeats in
/// flight (so keepalive never probes), leaves within the bound, not the write-stall timeout's 300 s.
@Suite(.offPool, .enabled(if: VethNamespace.testsEnabled), .timeLimit(.minutes(2 * TestTiming.scale)))
struct ChannelDeadPeerNetworkTests {
    @Test func aSubscriberWhosePeerVanishedLeavesWithinDeadPeerSeconds() async throws {
        let network = try VethNamespace()
        defer { network.remove() }
        let bound = 3
        let server = try SpoutTestServer {
            // The veth address: the vanishing peer reaches the server through the pair, the watcher locally.
            $0.host = network.hostAddress
            $0.channels.deadPeerSeconds = bound
            // A heartbeat every 200 ms: data is always in flight once the peer is gone.
            $0.sse.heartbeatSeconds = 0.2
        }
        let watcher = try StreamClient(
            client: LoopbackClient(port: server.port, host: network.hostAddress),
            path: "/channels/room?presence=true"
        )
        defer { watcher.close() }
        let ghost = try StreamClient(
            client: network.connect(to: network.hostAddress, port: server.port),
            path: "/channels/room?client=ghost"
        )
        defer { ghost.close() }
        #expect(ghost.status == 200)
        let joined = try watcher.multiFrames(1)
        #expect(joined.map(\.type) == ["join"])
        #expect(ghost.awaitComments(2), "heartbeats reach the peer while it is there")

        let cutAt = ContinuousClock.now
        try network.cutPeer()
        let left = try watcher.multiFrames(1, within: .seconds(bound + 15))
        let elapsed = ContinuousClock.now - cutAt
        #expect(left.map(\.type) == ["leave"], "\(left)")
        #expect(left.first?.object["client"] as? String == "ghost")
        // Within the bound of the last acknowledgement (just before the cut), and a check interval (1 s) of slack
        // for the loop's timer; more on a loaded machine.
        #expect(elapsed <= TestTiming.scaled(.seconds(bound + 2)), "left after \(elapsed)")
        await server.stop()
    }
}
