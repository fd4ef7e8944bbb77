import Glibc

/// One address a client socket can connect to: the bytes of a `sockaddr_in` or `sockaddr_in6`.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public struct SocketAddress: Sendable, Equatable, CustomStringConvertible {
    /// `AF_INET` or `AF_INET6`.
    public let family: Int32
    /// The socket address structure, as bytes.
    public let bytes: [UInt8]
    /// The address as text, for errors.
    public let description: String
}

/// The client side of TCP on non-blocking sockets: parse or resolve an address, start a connection, see how it went.
///
/// Nothing here blocks except ``resolve(host:port:)``, which calls `getaddrinfo` and must run off any event loop
/// (``RedisConnection`` calls it on a global queue, and only for a host that is not a numeric address).
///
/// **Ownership:** Stateless namespace; descriptors belong to the caller.
/// **Thread safety:** Safe to call from any thread.
public enum ClientSocket {
    /// The address of a numeric IPv4 or IPv6 host (`127.0.0.1`, `::1`), or nil for a host name.
    public static func numericAddress(host: String, port: Int) -> SocketAddress? {
        guard let port = UInt16(exactly: port) else { return nil }
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            return SocketAddress(
                family: AF_INET,
                bytes: withUnsafeBytes(of: v4) { Array($0) },
                description: "\(host):\(port)"
            )
        }
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            return SocketAddress(
                family: AF_INET6,
                bytes: withUnsafeBytes(of: v6) { Array($0) },
                description: "[\(host)]:\(port)"
            )
        }
        return nil
    }

    /// Resolves a host name with `getaddrinfo`. **Blocks**: never call it on an event loop.
    ///
    /// - Returns: The addresses in the resolver's order (IPv4 and IPv6 TCP only), or a message saying why there are
    ///   none.
    public static func resolve(host: String, port: Int) -> Result<[SocketAddress], ResolutionFailure> {
        guard UInt16(exactly: port) != nil else { return .failure(ResolutionFailure("port \(port) is out of range")) }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            return .failure(ResolutionFailure("cannot resolve \(host): \(String(cString: gai_strerror(status)))"))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var cursor = list
        while let entry = cursor, addresses.count < 16 {
            let info = entry.pointee
            cursor = info.ai_next
            guard info.ai_family == AF_INET || info.ai_family == AF_INET6, let address = info.ai_addr else { continue }
            let bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(info.ai_addrlen)))
            addresses.append(SocketAddress(family: info.ai_family, bytes: bytes, description: "\(host):\(port)"))
        }
        guard !addresses.isEmpty else { return .failure(ResolutionFailure("\(host) has no IPv4 or IPv6 address")) }
        return .success(addresses)
    }

    /// Why a host could not be resolved.
    public struct ResolutionFailure: Error, Sendable {
        /// Why, for errors and logs.
        public let message: String
        init(_ message: String) { self.message = message }
    }

    /// How ``connect(to:)`` went.
    public enum ConnectProgress {
        /// The socket is connected already.
        case connected
        /// The connection is in progress: wait until the socket is writable, then ask ``pendingError(_:)``.
        case inProgress
    }

    /// Creates a non-blocking, close-on-exec TCP socket with `TCP_NODELAY` and starts connecting it to `address`.
    ///
    /// - Returns: The descriptor (the caller's to close) and how far the connection got.
    /// - Throws: ``IOError`` from `socket` or `connect` (the descriptor is closed then).
    public static func connect(to address: SocketAddress) throws(IOError) -> (fd: Int32, progress: ConnectProgress) {
        let fd = Int32(
            try Syscall.blocking("socket") {
                Int(
                    socket(
                        address.family,
                        Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue),
                        0
                    )
                )
            }
        )
        var one: Int32 = 1
        // Commands must leave at once; Nagle would hold a small one for the server's delayed ACK.
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let result = address.bytes.withUnsafeBytes { bytes in
            Glibc.connect(
                fd,
                bytes.baseAddress!.assumingMemoryBound(to: sockaddr.self),
                socklen_t(bytes.count)
            )
        }
        if result == 0 {
            return (fd, .connected)
        }
        let code = errno
        if code == EINPROGRESS || code == EINTR {
            // After EINTR the connection goes on asynchronously too (connect(2)); writability reports its end.
            return (fd, .inProgress)
        }
        Glibc.close(fd)
        throw IOError(errno: code, call: "connect(\(address))")
    }

    /// The outcome of a connection that was in progress, once the socket is writable or failed: 0 when connected,
    /// else the `errno` of the failure (`SO_ERROR`).
    public static func pendingError(_ fd: Int32) -> Int32 {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else { return errno }
        return code
    }
}
