import Glibc

extension EventLoop {
    /// The bytes of the spare storage, and of them the bytes in whole pages that are resident (`mincore`;
    /// the partial pages at its ends are shared with other allocations and not counted). For tests.
    package var spareStorageBytes: (capacity: Int, resident: Int) {
        preconditionInEventLoop()
        guard let spare = spareStorage else { return (0, 0) }
        guard let pages = EventLoop.wholePages(of: spare) else { return (spare.count, 0) }
        var residency = [UInt8](repeating: 0, count: pages.count / EventLoop.pageBytes)
        guard mincore(pages.baseAddress, pages.count, &residency) == 0 else { return (spare.count, -1) }
        return (spare.count, residency.reduce(0) { $0 &+ Int($1 & 1) } &* EventLoop.pageBytes)
    }
}
