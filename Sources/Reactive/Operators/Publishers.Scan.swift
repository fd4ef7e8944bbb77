extension Publisher {
    /// Transforms elements by feeding each one, with the last result, to a closure, and
    /// publishes every intermediate result.
    ///
    ///     let cancellable = [1, 2, 3, 4].publisher
    ///         .scan(0, +)
    ///         .sink { print($0) }
    ///     // Prints: 1 3 6 10 (one per line)
    ///
    /// - Parameters:
    ///   - initialResult: The previous result the closure receives with the first element.
    ///   - nextPartialResult: A closure that takes the previous result and the next element.
    /// - Returns: A publisher of the accumulated results.
    @inlinable
    public func scan<T>(
        _ initialResult: T,
        _ nextPartialResult: @escaping (T, Output) -> T
    ) -> Publishers.Scan<Self, T> {
        Publishers.Scan(upstream: self, initialResult: initialResult, nextPartialResult: nextPartialResult)
    }

    /// Like ``scan(_:_:)``, with a closure that can throw; a thrown error fails the stream and
    /// cancels upstream.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .tryScan(0) { $0 + $1 }
    ///         .sink(receiveCompletion: { print($0) }, receiveValue: { print($0) })
    ///     // Prints: 1 3 6 finished (one per line)
    ///
    /// - Parameters:
    ///   - initialResult: The previous result the closure receives with the first element.
    ///   - nextPartialResult: A closure that takes the previous result and the next element, or throws.
    /// - Returns: A publisher of the accumulated results.
    public func tryScan<T>(
        _ initialResult: T,
        _ nextPartialResult: @escaping (T, Output) throws -> T
    ) -> Publishers.TryScan<Self, T> {
        Publishers.TryScan(upstream: self, initialResult: initialResult, nextPartialResult: nextPartialResult)
    }
}

extension Publishers {
    /// A publisher that publishes each result of accumulating the upstream elements with a closure.
    ///
    /// **Ownership:** a value; its subscriber retains the closure and the running result until the
    /// stream ends.
    ///
    /// **Thread safety:** value type; the closure runs on whatever thread upstream delivers on.
    public struct Scan<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The previous result the closure receives with the first element.
        public let initialResult: Output

        /// A closure that takes the previous result and the next element.
        public let nextPartialResult: (Output, Upstream.Output) -> Output

        /// Creates a publisher that accumulates the elements of `upstream` with `nextPartialResult`.
        @inlinable
        public init(
            upstream: Upstream,
            initialResult: Output,
            nextPartialResult: @escaping (Output, Upstream.Output) -> Output
        ) {
            self.upstream = upstream
            self.initialResult = initialResult
            self.nextPartialResult = nextPartialResult
        }

        @inlinable
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(ScanInner(downstream: subscriber, result: initialResult, next: nextPartialResult))
        }
    }

    /// A publisher that publishes each result of accumulating the upstream elements with a closure
    /// that can throw.
    ///
    /// **Ownership:** a value; its subscription retains the closure and the running result until the
    /// stream ends.
    ///
    /// **Thread safety:** value type; the closure runs on whatever thread upstream delivers on.
    public struct TryScan<Upstream: Publisher, Output>: Publisher {
        public typealias Failure = any Error

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The previous result the closure receives with the first element.
        public let initialResult: Output

        /// A closure that takes the previous result and the next element, or throws.
        public let nextPartialResult: (Output, Upstream.Output) throws -> Output

        /// Creates a publisher that accumulates the elements of `upstream` with `nextPartialResult`.
        public init(
            upstream: Upstream,
            initialResult: Output,
            nextPartialResult: @escaping (Output, Upstream.Output) throws -> Output
        ) {
            self.upstream = upstream
            self.initialResult = initialResult
            self.nextPartialResult = nextPartialResult
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let forwarding = TryScanForwarding<Upstream.Output, Output, Upstream.Failure>(
                result: initialResult,
                next: nextPartialResult
            )
            upstream.subscribe(ForwardingInner(forwarding: forwarding, downstream: subscriber))
        }
    }
}

// Upstream's subscription goes straight to downstream: no lock, no allocation per value. Generic
// over what it touches only, not nested in the publisher, so that long chains stay small types
// the optimizer still specializes.
// The running result needs no lock: a publisher never makes two `receive` calls at once.
// Inlinable, as `MapInner` is.
@usableFromInline
internal final class ScanInner<Input, Downstream: Subscriber>: Subscriber, CustomStringConvertible {
    @usableFromInline typealias Output = Downstream.Input
    @usableFromInline typealias Failure = Downstream.Failure

    @usableFromInline let downstream: Downstream
    @usableFromInline let next: (Output, Input) -> Output
    // Touched only from upstream's receive calls, which never overlap, so the dynamic exclusivity
    // check (a runtime call per access) is off.
    #if SPOUT_CHECKED_EXCLUSIVITY
        @usableFromInline var result: Output
    #else
        // Unchecked: bench/reactive.sh `chain`, `generic-chain` (every value).
        @usableFromInline @exclusivity(unchecked) var result: Output
    #endif

    @inlinable
    init(downstream: Downstream, result: Output, next: @escaping (Output, Input) -> Output) {
        self.downstream = downstream
        self.result = result
        self.next = next
    }

    @usableFromInline var description: String { "Scan" }

    @inlinable
    func receive(subscription: any Subscription) {
        downstream.receive(subscription: subscription)
    }

    @inlinable
    func receive(_ input: Input) -> Subscribers.Demand {
        let value = next(result, input)
        result = value
        return downstream.receive(value)
    }

    @inlinable
    func receive(completion: Subscribers.Completion<Failure>) {
        downstream.receive(completion: completion)
    }
}

/// The step of `tryScan`: accumulate and send, or fail with what the closure threw.
private struct TryScanForwarding<Input, Output, UpstreamFailure: Error>: Forwarding {
    typealias Failure = any Error

    var name: String { "TryScan" }

    var result: Output
    let next: (Output, Input) throws -> Output

    mutating func receive(_ input: Input) -> ForwardingStep<Output, any Error> {
        do {
            result = try next(result, input)
            return .send(result)
        } catch {
            return .fail(error)
        }
    }

    func failure(from error: UpstreamFailure) -> any Error { error }
}
