import Dispatch
import Glibc
import Synchronization

/// Hands freed heap memory back to the system a moment after large buffers were let go.
///
/// glibc's `malloc` keeps what it frees: a large block is served by `mmap` and unmapped on `free` only
/// until the first such block is freed, after which the threshold rises to that size and later blocks of
/// that size come from the heap arenas, whose free pages stay resident unless they sit at the very top.
/// So after one 4 MiB upstream body and its JSON decoding, tens of megabytes could stay in the process's
/// RSS for good — and more with each large body decoded from the cache on yet another thread's arena
/// (measured: five cache hits of a 3 MB post left 10 MB more anonymous memory before this). `malloc_trim(0)` returns the free pages of every arena (`madvise(MADV_DONTNEED)` on whole
/// free pages, wherever they are).
///
/// A trim walks every arena and takes their locks, so it runs rarely: once, ``delay`` after the first
/// ``largeBufferReleased()`` of a burst, on a utility queue (by then the decoder's intermediates are freed
/// too); calls meanwhile join that one. `malloc_trim` is looked up at run time (`dlsym`), since Glibc's
/// Swift module does not export it; on a C library without it this does nothing.
///
/// **Ownership:** one per process (``shared``).
///
/// **Thread safety:** safe to call from any thread (an atomic flag).
final class MemoryReturn: Sendable {
    private typealias Trim = @convention(c) (Int) -> Int32

    /// The process's one instance.
    static let shared = MemoryReturn(delay: .seconds(1))

    /// How long after a large buffer was released the trim runs.
    let delay: DispatchTimeInterval
    private let isScheduled = Atomic<Bool>(false)
    /// How many trims have run; ``trimCount`` (`+Testing`) reads it.
    let trims = Atomic<Int>(0)
    private let queue = DispatchQueue(label: "spout.memory-return", qos: .utility)
    private static let trim: Trim? = dlsym(nil, "malloc_trim").map { unsafeBitCast($0, to: Trim.self) }

    init(delay: DispatchTimeInterval) {
        self.delay = delay
    }

    /// A buffer of a megabyte or more was (or is about to be) freed: schedules a trim unless one is due.
    func largeBufferReleased() {
        guard Self.trim != nil else { return }
        guard isScheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        queue.asyncAfter(deadline: .now() + delay) { [self] in
            isScheduled.store(false, ordering: .releasing)
            _ = Self.trim?(0)
            trims.add(1, ordering: .relaxed)
        }
    }
}
