/// The two checks behind every decision about whom to trust: whether a peer is on the loopback interface, and
/// whether a secret it sent is the expected one, compared so that the time taken tells nothing about where they
/// differ. Used by the channels' access rules (``ChannelAccess``) and by the demo upstream's self-calls
/// (``SelfCall``).
///
/// **Thread safety:** stateless.
enum PeerTrust {
    /// Whether `address` is on the loopback interface (127.0.0.0/8, `::1`, or v4-mapped loopback).
    static func isLoopback(_ address: String) -> Bool {
        address == "::1" || address.utf8.starts(with: "127.".utf8) || address.utf8.starts(with: "::ffff:127.".utf8)
    }

    /// Compares every byte of `expected` whatever the first difference; lengths differ → not equal; an empty
    /// `expected` matches nothing.
    static func equalInConstantTime(_ given: [UInt8], _ expected: [UInt8]) -> Bool {
        var difference = UInt(bitPattern: given.count ^ expected.count)
        for index in expected.indices {
            let other = index < given.count ? given[index] : 0
            difference |= UInt(expected[index] ^ other)
        }
        return difference == 0 && !expected.isEmpty
    }
}
