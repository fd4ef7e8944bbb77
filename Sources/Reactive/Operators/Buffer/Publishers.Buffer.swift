extension Publisher {
    /// Buffers elements received from an upstream publisher.
    ///
    /// With ``Publishers/PrefetchStrategy/keepFull`` the upstream is asked for `size` elements at
    /// once and for one more whenever one goes downstream, so the buffer stays full ahead of
    /// demand. With ``Publishers/PrefetchStrategy/byRequest`` the upstream is asked for
    /// `.unlimited` and elements wait in the buffer until downstream asks for them. When an element
    /// arrives while the buffer holds `size`, `whenFull` decides: drop it, drop the oldest, or fail
    /// with a custom error. A completion (and the custom error) goes downstream after the elements
    /// buffered before it.
    ///
    ///     let buffered = [1, 2, 3].publisher.buffer(size: 2, prefetch: .keepFull, whenFull: .dropNewest)
    ///     let cancellable = buffered.sink { print($0) }
    ///     // Prints: 1 2 3 (one per line)
    ///
    /// - Parameters:
    ///   - size: The most elements to hold; must be greater than zero.
    ///   - prefetch: When to ask the upstream for elements.
    ///   - whenFull: What to do with an element that arrives when the buffer is full.
    /// - Returns: A publisher that buffers elements from this one.
    public func buffer(
        size: Int,
        prefetch: Publishers.PrefetchStrategy,
        whenFull: Publishers.BufferingStrategy<Failure>
    ) -> Publishers.Buffer<Self> {
        Publishers.Buffer(upstream: self, size: size, prefetch: prefetch, whenFull: whenFull)
    }
}

extension Publishers {
    /// A strategy for filling a buffer.
    ///
    /// **Thread safety:** value type; not shared.
    public enum PrefetchStrategy: Equatable, Hashable, Sendable {
        /// A strategy to fill the buffer at subscription time, and keep it full thereafter.
        case keepFull
        /// A strategy that avoids prefetching ahead of a full buffer: the upstream is asked for
        /// `.unlimited` and the buffer holds what downstream has not asked for yet.
        case byRequest
    }

    /// A strategy that handles exhaustion of a buffer's capacity.
    ///
    /// **Thread safety:** value type; the error closure runs on the thread that overflows the buffer.
    public enum BufferingStrategy<Failure: Error> {
        /// When the buffer is full, discard the newly received element.
        case dropNewest
        /// When the buffer is full, discard the oldest element in the buffer.
        case dropOldest
        /// When the buffer is full, execute the closure to provide a custom error.
        case customError(() -> Failure)
    }

    /// A publisher that buffers elements from an upstream publisher.
    ///
    /// **Ownership:** a value type; each subscription retains its subscriber, the upstream
    /// subscription and the buffered elements until it completes or is cancelled.
    ///
    /// **Thread safety:** safe to subscribe from any thread; deliveries are serialized.
    public struct Buffer<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The maximum number of elements to store.
        public let size: Int

        /// The strategy for initially populating the buffer.
        public let prefetch: Publishers.PrefetchStrategy

        /// The action to take when the buffer becomes full.
        public let whenFull: Publishers.BufferingStrategy<Upstream.Failure>

        /// Creates a publisher that buffers elements received from an upstream publisher.
        public init(
            upstream: Upstream,
            size: Int,
            prefetch: Publishers.PrefetchStrategy,
            whenFull: Publishers.BufferingStrategy<Upstream.Failure>
        ) {
            self.upstream = upstream
            self.size = size
            self.prefetch = prefetch
            self.whenFull = whenFull
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            guard size > 0 else { apiViolation("a buffer's size must be greater than zero, got \(size)") }
            let inner = BufferInner(downstream: subscriber, size: size, prefetch: prefetch, whenFull: whenFull)
            // Closures made here, where the types are concrete, keep the per-element path specialized.
            upstream.subscribe(
                RelaySubscriber<Output, Failure>(
                    "Buffer",
                    onSubscription: { inner.receive(subscription: $0) },
                    onValue: { inner.receive($0) },
                    onCompletion: { inner.receive(completion: $0) }
                )
            )
        }
    }
}
