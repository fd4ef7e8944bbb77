import Foundation
import Glibc
import HTTPServer

/// The reverse proxies whose word on the client's address is believed (`trustedProxies`, a list of CIDR networks),
/// and the client address of a request given its peer and its `Forwarded` (RFC 7239) or `X-Forwarded-For` fields.
///
/// Only a peer inside one of the networks may say who the client is; anyone else's forwarding fields are ignored.
/// The client is the rightmost hop that is not itself a trusted proxy (each proxy appends the address it saw, so
/// everything left of the first untrusted hop may have been written by the client). `Forwarded` wins over
/// `X-Forwarded-For` when both are present; a hop that is no address (`unknown`, an obfuscated `_name`) is the client
/// as far as Spout can tell: it is never loopback.
///
/// **Thread safety:** immutable; shared freely.
struct TrustedProxies: Sendable, Equatable {
    /// One network: its address bytes (4 or 16) and how many leading bits count.
    struct Network: Sendable, Equatable {
        let bytes: [UInt8]
        let prefixLength: Int

        /// `a.b.c.d/n`, `x::y/n`, or a single address (a /32 or /128).
        init?(_ text: String) {
            let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let bytes = TrustedProxies.address(parts[0]) else { return nil }
            let maximum = bytes.count * 8
            if parts.count == 2 {
                guard let length = Int(parts[1]), (0...maximum).contains(length) else { return nil }
                prefixLength = length
            } else {
                prefixLength = maximum
            }
            self.bytes = bytes
        }

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var remaining = prefixLength
            for index in bytes.indices where remaining > 0 {
                let bits = min(8, remaining)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if address[index] & mask != bytes[index] & mask { return false }
                remaining -= bits
            }
            return true
        }
    }

    let networks: [Network]

    /// No trusted proxy: every peer is the client.
    static let none = TrustedProxies(networks: [])

    init(networks: [Network]) {
        self.networks = networks
    }

    /// The networks of `texts`, or `nil` when one is not a CIDR network or address.
    init?(_ texts: [String]) {
        var networks: [Network] = []
        for text in texts {
            guard let network = Network(text.trimmingCharacters(in: .whitespaces)) else { return nil }
            networks.append(network)
        }
        self.init(networks: networks)
    }

    var isEmpty: Bool { networks.isEmpty }

    /// Whether `address` (text) is inside a trusted network.
    func trusts(_ address: some StringProtocol) -> Bool {
        guard let bytes = Self.address(address) else { return false }
        return networks.contains { $0.contains(bytes) }
    }

    /// Who the request is from: the client, and the trusted proxy it came through (`nil` when the peer is the
    /// client).
    func client(peer: String, headers: Headers) -> (client: String, proxy: String?) {
        guard trusts(peer) else { return (peer, nil) }
        let hops = Self.forwardedHops(headers) ?? Self.xForwardedForHops(headers)
        guard !hops.isEmpty else { return (peer, peer) }
        for hop in hops.reversed() where !trusts(hop) {
            return (hop, peer)
        }
        return (hops[0], peer)
    }

    /// The `for=` values of every `Forwarded` element, in order; `nil` when there is no `Forwarded` field.
    static func forwardedHops(_ headers: Headers) -> [String]? {
        let fields = headers.values(for: "Forwarded")
        guard !fields.isEmpty else { return nil }
        var hops: [String] = []
        for field in fields {
            for element in field.split(separator: ",") {
                for pair in element.split(separator: ";") {
                    let trimmed = pair.trimmingCharacters(in: .whitespaces)
                    guard trimmed.lowercased().hasPrefix("for=") else { continue }
                    hops.append(node(String(trimmed.dropFirst(4))))
                }
            }
        }
        return hops
    }

    /// The addresses of `X-Forwarded-For`, in order.
    static func xForwardedForHops(_ headers: Headers) -> [String] {
        headers.values(for: "X-Forwarded-For").flatMap { field in
            field.split(separator: ",").map { node($0.trimmingCharacters(in: .whitespaces)) }
        }
    }

    /// A node of RFC 7239 §6 without quotes, brackets and port: `"[2001:db8::1]:4711"` → `2001:db8::1`,
    /// `192.0.2.43:47011` → `192.0.2.43`.
    static func node(_ text: String) -> String {
        var value = Substring(text)
        if value.count >= 2, value.first == "\"", value.last == "\"" { value = value.dropFirst().dropLast() }
        if value.first == "[", let close = value.firstIndex(of: "]") {
            return String(value[value.index(after: value.startIndex)..<close])
        }
        if value.filter({ $0 == ":" }).count == 1, let colon = value.firstIndex(of: ":") {
            return String(value[..<colon])
        }
        return String(value)
    }

    /// The bytes of an IPv4 (4) or IPv6 (16) address; an IPv4-mapped IPv6 address is its IPv4 address.
    static func address(_ text: some StringProtocol) -> [UInt8]? {
        let string = String(text)
        guard !string.isEmpty, string.utf8.count <= 64 else { return nil }
        var four = [UInt8](repeating: 0, count: 4)
        if four.withUnsafeMutableBytes({ inet_pton(AF_INET, string, $0.baseAddress) }) == 1 { return four }
        var sixteen = [UInt8](repeating: 0, count: 16)
        guard sixteen.withUnsafeMutableBytes({ inet_pton(AF_INET6, string, $0.baseAddress) }) == 1 else { return nil }
        if sixteen[..<10].allSatisfy({ $0 == 0 }), sixteen[10] == 0xFF, sixteen[11] == 0xFF {
            return Array(sixteen[12...])
        }
        return sixteen
    }
}
