import Glibc

/// Thin, typed wrappers over the socket calls of servers and their connections: listen, accept, read, send,
/// shut down, close, and the kernel's queue sizes. The client side (connect) is ``ClientSocket``.
///
/// Every call goes through ``Syscall``; descriptors are plain `Int32`s owned by the caller
/// (a listener by its server, an accepted socket by its connection).
///
/// ``read(_:into:)`` and ``send(_:_:)`` (with ``Syscall`` and the clocks of ``SystemEnvironment``) are `@inlinable`:
/// they are on every request's path of the protocols in the modules above.
///
/// **Ownership:** Stateless namespace.
///
/// **Thread safety:** Safe to call from any thread; a descriptor must be used by one queue at a time.
public enum Socket {
    /// Creates a non-blocking listening TCP socket with `SO_REUSEADDR` on `host:port`.
    /// - Parameters:
    ///   - host: A numeric IPv4 or IPv6 address (`127.0.0.1`, `0.0.0.0`, `::`, `::1`) or a host name.
    ///   - port: The TCP port; `0` lets the kernel pick one.
    ///   - backlog: The accept queue length passed to `listen(2)`.
    /// - Returns: The descriptor and the port actually bound.
    /// - Throws: ``IOError`` from `getaddrinfo`, `socket`, `bind` or `listen`.
    public static func makeListener(host: String, port: Int, backlog: Int32) throws(IOError) -> (fd: Int32, port: Int) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw IOError(errno: status == EAI_SYSTEM ? Glibc.errno : EINVAL, call: "getaddrinfo(\(host))")
        }
        defer { freeaddrinfo(list) }
        let info = first.pointee
        let fd = Int32(
            try Syscall.blocking("socket") {
                Int(socket(info.ai_family, info.ai_socktype | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0))
            }
        )
        do {
            try setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
            try Syscall.blocking("bind") { Int(bind(fd, info.ai_addr, info.ai_addrlen)) }
            try Syscall.blocking("listen") { Int(listen(fd, backlog)) }
            return (fd, try boundPort(fd))
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    /// The local port a socket is bound to.
    public static func boundPort(_ fd: Int32) throws(IOError) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { (pointer) throws(IOError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (address) throws(IOError) in
                try Syscall.blocking("getsockname") { Int(getsockname(fd, address, &length)) }
            }
        }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafeBytes(of: storage) { Int(UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self))) }
        case AF_INET6:
            return withUnsafeBytes(of: storage) { Int(UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self))) }
        default:
            throw IOError(errno: EAFNOSUPPORT, call: "getsockname")
        }
    }

    /// Accepts one pending connection as a non-blocking, close-on-exec socket with `TCP_NODELAY`.
    /// - Returns: The new descriptor, or ``IOResult/wouldBlock`` when the queue is empty.
    public static func accept(_ listener: Int32) throws(IOError) -> IOResult<Int32> {
        let flags = Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue)
        switch try Syscall.run("accept4", { Int(LinuxSymbols.accept4(listener, nil, nil, flags)) }) {
        case .processed(let fd):
            let client = Int32(fd)
            // Small responses must leave at once; Nagle would hold them for the peer's delayed ACK.
            try? setOption(client, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
            return .processed(client)
        case .wouldBlock:
            return .wouldBlock
        }
    }

    /// Reads into `buffer`. `0` means the peer closed its side.
    @inlinable @inline(__always)
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(IOError) -> IOResult<Int> {
        try Syscall.run("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// Sends `bytes` with `MSG_NOSIGNAL`, so a closed peer yields `EPIPE` rather than `SIGPIPE`.
    @inlinable @inline(__always)
    public static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(IOError) -> IOResult<Int> {
        try Syscall.run("send") { Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Half-closes the sending side (`shutdown(SHUT_WR)`); errors are irrelevant at this point.
    public static func shutdownWrite(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Closes a descriptor. `EINTR` is not retried: on Linux the descriptor is gone either way.
    public static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Bytes in the kernel send queue not yet sent at all (`SIOCOUTQNSD`): they wait for the peer's
    /// receive window, so a non-zero value means the reader is slower than we write.
    public static func unsentByteCount(_ fd: Int32) -> Int? {
        byteCount(fd, request: 0x894B)  // SIOCOUTQNSD, <linux/sockios.h>; not in Glibc's Swift module
    }

    /// Bytes in the kernel receive queue not read yet (`FIONREAD`); `nil` if the call failed.
    public static func unreadByteCount(_ fd: Int32) -> Int? {
        byteCount(fd, request: 0x541B)  // FIONREAD, <asm-generic/ioctls.h>; not in Glibc's Swift module
    }

    /// A queue's byte count the kernel reports through the `ioctl` `request` (an `int` out-parameter).
    private static func byteCount(_ fd: Int32, request: UInt) -> Int? {
        var count: Int32 = 0
        guard ioctl(fd, request, &count) == 0 else { return nil }
        return Int(count)
    }

    /// Caps the kernel send buffer (`SO_SNDBUF`; the kernel doubles the value for its bookkeeping and turns
    /// autotuning off for this socket). Best effort: a failure leaves the autotuned buffer.
    public static func setSendBufferBytes(_ fd: Int32, _ bytes: Int) {
        try? setOption(fd, SOL_SOCKET, SO_SNDBUF, Int32(clamping: bytes))
    }

    /// The kernel send buffer's size as the kernel reports it (`SO_SNDBUF`, twice what was set).
    public static func sendBufferBytes(_ fd: Int32) -> Int? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &value, &length) == 0 else { return nil }
        return Int(value)
    }

    private static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) throws(IOError) {
        var value = value
        try Syscall.blocking("setsockopt") {
            Int(setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)))
        }
    }
}
