import Glibc

// Glibc's Swift module map leaves out <sys/epoll.h> and <sys/eventfd.h> (and accept4, ppoll and
// pthread_setname_np, which need _GNU_SOURCE). The symbols are looked up once with dlsym and called through @convention(c)
// pointers: the C calling convention, with no extra C target.
enum LinuxSymbols {
    typealias EpollCreate1 = @convention(c) (Int32) -> Int32
    typealias EpollControl = @convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32
    typealias EpollWait = @convention(c) (Int32, UnsafeMutableRawPointer?, Int32, Int32) -> Int32
    typealias EventFD = @convention(c) (UInt32, Int32) -> Int32
    typealias PPoll =
        @convention(c) (UnsafeMutablePointer<pollfd>?, nfds_t, UnsafePointer<timespec>?, UnsafeRawPointer?) -> Int32
    typealias SetThreadName = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32
    typealias Accept4 =
        @convention(c) (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32) -> Int32

    static let epollCreate1: EpollCreate1 = symbol("epoll_create1")
    static let epollControl: EpollControl = symbol("epoll_ctl")
    static let epollWait: EpollWait = symbol("epoll_wait")
    static let accept4: Accept4 = symbol("accept4")
    static let eventFD: EventFD = symbol("eventfd")
    static let ppoll: PPoll = symbol("ppoll")
    static let setThreadName: SetThreadName = symbol("pthread_setname_np")

    private static func symbol<F>(_ name: String) -> F {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
            fatalError("libc lacks \(name)")
        }
        return unsafeBitCast(address, to: F.self)
    }
}
