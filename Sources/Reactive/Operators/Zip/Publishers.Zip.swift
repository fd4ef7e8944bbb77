extension Publisher {
    /// Combines elements from another publisher and delivers pairs of elements as tuples.
    ///
    /// The returned publisher waits until both publishers have emitted an element, then delivers
    /// the oldest unconsumed element of each as a tuple. It finishes when either upstream has
    /// finished and none of its elements is left waiting, and fails as soon as either fails.
    /// Every downstream request is forwarded to both upstreams.
    ///
    ///     let cancellable = [1, 2, 3].publisher.zip(["a", "b"].publisher)
    ///         .sink { print($0.0, $0.1) }
    ///     // Prints: 1 a, then 2 b
    ///
    /// - Parameter other: Another publisher.
    /// - Returns: A publisher that emits pairs of elements from the upstream publishers as tuples.
    @inlinable
    public func zip<P: Publisher>(_ other: P) -> Publishers.Zip<Self, P> where Failure == P.Failure {
        Publishers.Zip(self, other)
    }

    /// Combines elements from two other publishers and delivers groups of elements as tuples.
    ///
    ///     let cancellable = [1, 2].publisher.zip(["a", "b"].publisher, [true, false].publisher)
    ///         .sink { print($0.0, $0.1, $0.2) }
    ///     // Prints: 1 a true, then 2 b false
    ///
    /// - Returns: A publisher that emits groups of elements from the upstream publishers as tuples.
    @inlinable
    public func zip<P: Publisher, Q: Publisher>(
        _ publisher1: P,
        _ publisher2: Q
    ) -> Publishers.Zip3<Self, P, Q> where Failure == P.Failure, P.Failure == Q.Failure {
        Publishers.Zip3(self, publisher1, publisher2)
    }

    /// Combines elements from three other publishers and delivers groups of elements as tuples.
    ///
    ///     let cancellable = [1].publisher.zip(["a"].publisher, [true].publisher, [2.5].publisher)
    ///         .sink { print($0.0, $0.1, $0.2, $0.3) }
    ///     // Prints: 1 a true 2.5
    ///
    /// - Returns: A publisher that emits groups of elements from the upstream publishers as tuples.
    @inlinable
    public func zip<P: Publisher, Q: Publisher, R: Publisher>(
        _ publisher1: P,
        _ publisher2: Q,
        _ publisher3: R
    ) -> Publishers.Zip4<Self, P, Q, R>
    where Failure == P.Failure, P.Failure == Q.Failure, Q.Failure == R.Failure {
        Publishers.Zip4(self, publisher1, publisher2, publisher3)
    }
}

extension Publisher {
    /// Combines elements from another publisher and delivers a transformation of each pair.
    ///
    ///     let cancellable = [1, 2].publisher.zip([10, 20].publisher) { $0 + $1 }
    ///         .sink { print($0) }
    ///     // Prints: 11 22 (one per line)
    ///
    /// - Parameters:
    ///   - other: Another publisher.
    ///   - transform: A closure that makes a new value from an element of each publisher.
    /// - Returns: A publisher of the transformed pairs.
    @inlinable
    public func zip<P: Publisher, T>(
        _ other: P,
        _ transform: @escaping (Output, P.Output) -> T
    ) -> Publishers.Map<Publishers.Zip<Self, P>, T> where Failure == P.Failure {
        Publishers.Map(upstream: Publishers.Zip(self, other)) { transform($0.0, $0.1) }
    }

    /// Combines elements from two other publishers and delivers a transformation of each group.
    ///
    ///     let cancellable = [1].publisher.zip([10].publisher, [100].publisher) { $0 + $1 + $2 }
    ///         .sink { print($0) }
    ///     // Prints: 111
    ///
    /// - Returns: A publisher of the transformed groups.
    @inlinable
    public func zip<P: Publisher, Q: Publisher, T>(
        _ publisher1: P,
        _ publisher2: Q,
        _ transform: @escaping (Output, P.Output, Q.Output) -> T
    ) -> Publishers.Map<Publishers.Zip3<Self, P, Q>, T> where Failure == P.Failure, P.Failure == Q.Failure {
        Publishers.Map(upstream: Publishers.Zip3(self, publisher1, publisher2)) { transform($0.0, $0.1, $0.2) }
    }

    /// Combines elements from three other publishers and delivers a transformation of each group.
    ///
    ///     let cancellable = [1].publisher.zip([2].publisher, [3].publisher, [4].publisher) { $0 * $1 * $2 * $3 }
    ///         .sink { print($0) }
    ///     // Prints: 24
    ///
    /// - Returns: A publisher of the transformed groups.
    @inlinable
    public func zip<P: Publisher, Q: Publisher, R: Publisher, T>(
        _ publisher1: P,
        _ publisher2: Q,
        _ publisher3: R,
        _ transform: @escaping (Output, P.Output, Q.Output, R.Output) -> T
    ) -> Publishers.Map<Publishers.Zip4<Self, P, Q, R>, T>
    where Failure == P.Failure, P.Failure == Q.Failure, Q.Failure == R.Failure {
        Publishers.Map(upstream: Publishers.Zip4(self, publisher1, publisher2, publisher3)) {
            transform($0.0, $0.1, $0.2, $0.3)
        }
    }
}

extension Publishers {
    /// A publisher created by applying the zip function to two upstream publishers.
    ///
    /// **Ownership:** a value type; each subscription retains its subscriber and both upstream
    /// subscriptions until it completes or is cancelled.
    ///
    /// **Thread safety:** safe to subscribe from any thread; deliveries are serialized.
    public struct Zip<A: Publisher, B: Publisher>: Publisher where A.Failure == B.Failure {
        public typealias Output = (A.Output, B.Output)
        public typealias Failure = A.Failure

        /// A publisher to zip.
        public let a: A

        /// Another publisher to zip.
        public let b: B

        /// Creates a publisher that zips the elements of two publishers.
        @inlinable
        public init(_ a: A, _ b: B) {
            self.a = a
            self.b = b
        }

        @inlinable
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            typealias Storage = ZipStorage2<A.Output, B.Output>
            let inner = CombiningInner<S, Storage>(downstream: subscriber)
            subscriber.receive(subscription: inner)
            a.subscribe(inner.makeSide(0) { $0.appendA($1) })
            b.subscribe(inner.makeSide(1) { $0.appendB($1) })
        }
    }

    /// A publisher created by applying the zip function to three upstream publishers.
    ///
    /// **Ownership:** a value type; each subscription retains its subscriber and the upstream
    /// subscriptions until it completes or is cancelled.
    ///
    /// **Thread safety:** safe to subscribe from any thread; deliveries are serialized.
    public struct Zip3<A: Publisher, B: Publisher, C: Publisher>: Publisher
    where A.Failure == B.Failure, B.Failure == C.Failure {
        public typealias Output = (A.Output, B.Output, C.Output)
        public typealias Failure = A.Failure

        /// A publisher to zip.
        public let a: A

        /// A second publisher to zip.
        public let b: B

        /// A third publisher to zip.
        public let c: C

        /// Creates a publisher that zips the elements of three publishers.
        @inlinable
        public init(_ a: A, _ b: B, _ c: C) {
            self.a = a
            self.b = b
            self.c = c
        }

        @inlinable
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            typealias Storage = ZipStorage3<A.Output, B.Output, C.Output>
            let inner = CombiningInner<S, Storage>(downstream: subscriber)
            subscriber.receive(subscription: inner)
            a.subscribe(inner.makeSide(0) { $0.a.append($1) })
            b.subscribe(inner.makeSide(1) { $0.b.append($1) })
            c.subscribe(inner.makeSide(2) { $0.c.append($1) })
        }
    }

    /// A publisher created by applying the zip function to four upstream publishers.
    ///
    /// **Ownership:** a value type; each subscription retains its subscriber and the upstream
    /// subscriptions until it completes or is cancelled.
    ///
    /// **Thread safety:** safe to subscribe from any thread; deliveries are serialized.
    public struct Zip4<A: Publisher, B: Publisher, C: Publisher, D: Publisher>: Publisher
    where A.Failure == B.Failure, B.Failure == C.Failure, C.Failure == D.Failure {
        public typealias Output = (A.Output, B.Output, C.Output, D.Output)
        public typealias Failure = A.Failure

        /// A publisher to zip.
        public let a: A

        /// A second publisher to zip.
        public let b: B

        /// A third publisher to zip.
        public let c: C

        /// A fourth publisher to zip.
        public let d: D

        /// Creates a publisher that zips the elements of four publishers.
        @inlinable
        public init(_ a: A, _ b: B, _ c: C, _ d: D) {
            self.a = a
            self.b = b
            self.c = c
            self.d = d
        }

        @inlinable
        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            typealias Storage = ZipStorage4<A.Output, B.Output, C.Output, D.Output>
            let inner = CombiningInner<S, Storage>(downstream: subscriber)
            subscriber.receive(subscription: inner)
            a.subscribe(inner.makeSide(0) { $0.a.append($1) })
            b.subscribe(inner.makeSide(1) { $0.b.append($1) })
            c.subscribe(inner.makeSide(2) { $0.c.append($1) })
            d.subscribe(inner.makeSide(3) { $0.d.append($1) })
        }
    }
}

extension Publishers.Zip: Equatable where A: Equatable, B: Equatable {}

extension Publishers.Zip3: Equatable where A: Equatable, B: Equatable, C: Equatable {}

extension Publishers.Zip4: Equatable where A: Equatable, B: Equatable, C: Equatable, D: Equatable {}

/// The values two zipped sides sent and that were not yet paired, oldest first.
///
/// A value that completes a pair at once (its side had nothing waiting, the other side had) is paired
/// as it arrives, into ``ready``, instead of going through its side's queue: the usual case of a
/// side that runs behind the other costs no append and removal (bench/reactive.sh `zip-mapped`).
/// The pair in ``ready`` is always the oldest: only a value of a side with nothing waiting makes it,
/// with the oldest value of the other side, and while it waits every later value is queued.
///
/// - Complexity: O(1) amortized per value (ring buffers).
@usableFromInline
internal struct ZipStorage2<A, B>: CombiningStorage {
    @usableFromInline
    static var operatorName: String { "Zip" }

    @inlinable
    init() {}

    @usableFromInline var a = RingQueue<A>()
    @usableFromInline var b = RingQueue<B>()
    /// The oldest pair, already formed; when set, it goes out before anything in the queues.
    @usableFromInline var ready: (A, B)?

    /// Records a value of the first side.
    @inlinable
    mutating func appendA(_ value: A) {
        if ready == nil, a.isEmpty, let other = b.popFirst() {
            ready = (value, other)
        } else {
            a.append(value)
        }
    }

    /// Records a value of the second side.
    @inlinable
    mutating func appendB(_ value: B) {
        if ready == nil, b.isEmpty, let other = a.popFirst() {
            ready = (other, value)
        } else {
            b.append(value)
        }
    }

    @inlinable
    mutating func takeOutput() -> (A, B)? {
        if let pair = ready {
            ready = nil
            return pair
        }
        guard !a.isEmpty, !b.isEmpty else { return nil }
        return (a.popFirst().unsafelyUnwrapped, b.popFirst().unsafelyUnwrapped)
    }

    @inlinable
    var hasOutput: Bool { ready != nil || (!a.isEmpty && !b.isEmpty) }

    @inlinable
    func isExhausted(finishedSides: UInt8) -> Bool {
        guard ready == nil else { return false }
        return (finishedSides & 0b01 != 0 && a.isEmpty) || (finishedSides & 0b10 != 0 && b.isEmpty)
    }
}

/// The values three zipped sides sent and that were not yet grouped, oldest first.
///
/// - Complexity: O(1) amortized per value (ring buffers).
@usableFromInline
internal struct ZipStorage3<A, B, C>: CombiningStorage {
    @usableFromInline
    static var operatorName: String { "Zip" }

    @inlinable
    init() {}

    @usableFromInline var a = RingQueue<A>()
    @usableFromInline var b = RingQueue<B>()
    @usableFromInline var c = RingQueue<C>()

    @inlinable
    mutating func takeOutput() -> (A, B, C)? {
        guard !a.isEmpty, !b.isEmpty, !c.isEmpty else { return nil }
        return (a.popFirst().unsafelyUnwrapped, b.popFirst().unsafelyUnwrapped, c.popFirst().unsafelyUnwrapped)
    }

    @inlinable
    var hasOutput: Bool { !a.isEmpty && !b.isEmpty && !c.isEmpty }

    @inlinable
    func isExhausted(finishedSides: UInt8) -> Bool {
        (finishedSides & 0b001 != 0 && a.isEmpty) || (finishedSides & 0b010 != 0 && b.isEmpty)
            || (finishedSides & 0b100 != 0 && c.isEmpty)
    }
}

/// The values four zipped sides sent and that were not yet grouped, oldest first.
///
/// - Complexity: O(1) amortized per value (ring buffers).
@usableFromInline
internal struct ZipStorage4<A, B, C, D>: CombiningStorage {
    @usableFromInline
    static var operatorName: String { "Zip" }

    @inlinable
    init() {}

    @usableFromInline var a = RingQueue<A>()
    @usableFromInline var b = RingQueue<B>()
    @usableFromInline var c = RingQueue<C>()
    @usableFromInline var d = RingQueue<D>()

    @inlinable
    mutating func takeOutput() -> (A, B, C, D)? {
        guard !a.isEmpty, !b.isEmpty, !c.isEmpty, !d.isEmpty else { return nil }
        return (
            a.popFirst().unsafelyUnwrapped, b.popFirst().unsafelyUnwrapped,
            c.popFirst().unsafelyUnwrapped, d.popFirst().unsafelyUnwrapped
        )
    }

    @inlinable
    var hasOutput: Bool { !a.isEmpty && !b.isEmpty && !c.isEmpty && !d.isEmpty }

    @inlinable
    func isExhausted(finishedSides: UInt8) -> Bool {
        (finishedSides & 0b0001 != 0 && a.isEmpty) || (finishedSides & 0b0010 != 0 && b.isEmpty)
            || (finishedSides & 0b0100 != 0 && c.isEmpty) || (finishedSides & 0b1000 != 0 && d.isEmpty)
    }
}
