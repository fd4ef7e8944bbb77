import Glibc

extension Socket {
    /// The IP address of the peer of a connected socket, as text (`127.0.0.1`, `::1`; an IPv4 peer of an IPv6
    /// socket reads as `::ffff:127.0.0.1`), or `""` when it cannot be told (the peer is already gone, or the
    /// socket is not an IP socket). One `getpeername(2)`, no allocation for addresses of up to 15 characters.
    public static func peerAddress(_ fd: Int32) -> String {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard status == 0 else { return "" }
        let family = Int32(storage.ss_family)
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { text -> String in
            let written: UnsafePointer<CChar>? = withUnsafePointer(to: &storage) { pointer in
                switch family {
                case AF_INET:
                    pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                        withUnsafePointer(to: address.pointee.sin_addr) {
                            inet_ntop(AF_INET, $0, text.baseAddress, socklen_t(INET6_ADDRSTRLEN))
                        }
                    }
                case AF_INET6:
                    pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                        withUnsafePointer(to: address.pointee.sin6_addr) {
                            inet_ntop(AF_INET6, $0, text.baseAddress, socklen_t(INET6_ADDRSTRLEN))
                        }
                    }
                default:
                    nil
                }
            }
            guard let written else { return "" }
            return String(cString: written)
        }
    }
}
