extension Publisher {
    /// Subscribes to an additional publisher and publishes a tuple upon receiving output from
    /// either publisher.
    ///
    /// Nothing is published until both publishers have sent a value; after that, every value from
    /// either side publishes the latest value of each. It finishes when both upstreams have
    /// finished and fails as soon as either fails. Every downstream request is forwarded to both
    /// upstreams; when downstream demand runs out, only the most recent value of each side is kept
    /// (a buffer of one per side), and the newest combination goes out when demand arrives.
    ///
    ///     let letters = PassthroughSubject<String, Never>(), numbers = PassthroughSubject<Int, Never>()
    ///     let cancellable = letters.combineLatest(numbers).sink { print($0.0, $0.1) }
    ///     letters.send("a"); numbers.send(1); letters.send("b")  // Prints: a 1, then b 1
    ///
    /// - Parameter other: Another publisher to combine with this one.
    /// - Returns: A publisher that receives and combines elements from this and another publisher.
    public func combineLatest<P: Publisher>(_ other: P) -> Publishers.CombineLatest<Self, P>
    where Failure == P.Failure {
        Publishers.CombineLatest(self, other)
    }

    /// Subscribes to two additional publishers and publishes a tuple upon receiving output from any
    /// of the publishers.
    ///
    ///     let a = CurrentValueSubject<Int, Never>(1), b = CurrentValueSubject<Int, Never>(2)
    ///     let cancellable = a.combineLatest(b, Just(3)).sink { print($0.0, $0.1, $0.2) }
    ///     b.send(5)  // Prints: 1 2 3, then 1 5 3
    ///
    /// - Returns: A publisher that receives and combines elements from this and two other publishers.
    public func combineLatest<P: Publisher, Q: Publisher>(
        _ publisher1: P,
        _ publisher2: Q
    ) -> Publishers.CombineLatest3<Self, P, Q> where Failure == P.Failure, P.Failure == Q.Failure {
        Publishers.CombineLatest3(self, publisher1, publisher2)
    }

    /// Subscribes to three additional publishers and publishes a tuple upon receiving output from
    /// any of the publishers.
    ///
    ///     let a = CurrentValueSubject<Int, Never>(1)
    ///     let cancellable = a.combineLatest(Just(2), Just(3), Just(4)).sink { print($0) }
    ///     a.send(9)  // Prints: (1, 2, 3, 4), then (9, 2, 3, 4)
    ///
    /// - Returns: A publisher that receives and combines elements from this and three other
    ///   publishers.
    public func combineLatest<P: Publisher, Q: Publisher, R: Publisher>(
        _ publisher1: P,
        _ publisher2: Q,
        _ publisher3: R
    ) -> Publishers.CombineLatest4<Self, P, Q, R>
    where Failure == P.Failure, P.Failure == Q.Failure, Q.Failure == R.Failure {
        Publishers.CombineLatest4(self, publisher1, publisher2, publisher3)
    }
}

extension Publisher {
    /// Subscribes to an additional publisher and invokes a closure upon receiving output from
    /// either publisher, once both have sent a value.
    ///
    ///     let a = CurrentValueSubject<Int, Never>(1), b = CurrentValueSubject<Int, Never>(10)
    ///     let cancellable = a.combineLatest(b) { $0 + $1 }.sink { print($0) }
    ///     a.send(2)  // Prints: 11, then 12
    ///
    /// - Parameters:
    ///   - other: Another publisher to combine with this one.
    ///   - transform: A closure that makes a new value from the latest value of each publisher.
    /// - Returns: A publisher of the transformed combinations.
    public func combineLatest<P: Publisher, T>(
        _ other: P,
        _ transform: @escaping (Output, P.Output) -> T
    ) -> Publishers.Map<Publishers.CombineLatest<Self, P>, T> where Failure == P.Failure {
        Publishers.Map(upstream: Publishers.CombineLatest(self, other)) { transform($0.0, $0.1) }
    }

    /// Subscribes to two additional publishers and invokes a closure upon receiving output from any
    /// of them, once all have sent a value.
    ///
    ///     let a = CurrentValueSubject<Int, Never>(1)
    ///     let cancellable = a.combineLatest(Just(10), Just(100)) { $0 + $1 + $2 }.sink { print($0) }
    ///     a.send(2)  // Prints: 111, then 112
    ///
    /// - Returns: A publisher of the transformed combinations.
    public func combineLatest<P: Publisher, Q: Publisher, T>(
        _ publisher1: P,
        _ publisher2: Q,
        _ transform: @escaping (Output, P.Output, Q.Output) -> T
    ) -> Publishers.Map<Publishers.CombineLatest3<Self, P, Q>, T> where Failure == P.Failure, P.Failure == Q.Failure {
        Publishers.Map(upstream: Publishers.CombineLatest3(self, publisher1, publisher2)) {
            transform($0.0, $0.1, $0.2)
        }
    }

    /// Subscribes to three additional publishers and invokes a closure upon receiving output from
    /// any of them, once all have sent a value.
    ///
    ///     let a = CurrentValueSubject<Int, Never>(1)
    ///     let cancellable = a.combineLatest(Just(2), Just(3), Just(4)) { $0 * $1 * $2 * $3 }.sink { print($0) }
    ///     a.send(2)  // Prints: 24, then 48
    ///
    /// - Returns: A publisher of the transformed combinations.
    public func combineLatest<P: Publisher, Q: Publisher, R: Publisher, T>(
        _ publisher1: P,
        _ publisher2: Q,
        _ publisher3: R,
        _ transform: @escaping (Output, P.Output, Q.Output, R.Output) -> T
    ) -> Publishers.Map<Publishers.CombineLatest4<Self, P, Q, R>, T>
    where Failure == P.Failure, P.Failure == Q.Failure, Q.Failure == R.Failure {
        Publishers.Map(upstream: Publishers.CombineLatest4(self, publisher1, publisher2, publisher3)) {
            transform($0.0, $0.1, $0.2, $0.3)
        }
    }
}

extension Publishers {
    /// A publisher that receives and combines the latest elements from two publishers.
    ///
    /// **Ownership:** a value type; each subscription retains its subscriber and both upstream
    /// subscriptions until it completes or is cancelled.
    ///
    /// **Thread safety:** safe to subscribe from any thread; deliveries are serialized.
    public struct CombineLatest<A: Publisher, B: Publisher>: Publisher where A.Failure == B.Failure {
        public typealias Output = (A.Output, B.Output)
        public typealias Failure = A.Failure

        /// A publisher to combine.
        public let a: A

        /// Another publisher to combine.
        public let b: B

        /// Creates a publisher that combines the latest elements of two publishers.
        public init(_ a: A, _ b: B) {
            self.a = a
            self.b = b
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            typealias Storage = LatestStorage2<A.Output, B.Output>
            let inner = CombiningInner<S, Storage>(downstream: subscriber)
            subscriber.receive(subscription: inner)
            a.subscribe(
                inner.makeSide(0) {
                    $0.a = $1; $0.changed = true
                }
            )
            b.subscribe(
                inner.makeSide(1) {
                    $0.b = $1; $0.changed = true
                }
            )
        }
    }

    /// A publisher that receives and combines the latest elements from three publishers.
    ///
    /// **Ownership:** a value type; each subscription retains its subscriber and the upstream
    /// subscriptions until it completes or is cancelled.
    ///
    /// **Thread safety:** safe to subscribe from any thread; deliveries are serialized.
    public struct CombineLatest3<A: Publisher, B: Publisher, C: Publisher>: Publisher
    where A.Failure == B.Failure, B.Failure == C.Failure {
        public typealias Output = (A.Output, B.Output, C.Output)
        public typealias Failure = A.Failure

        /// A publisher to combine.
        public let a: A

        /// A second publisher to combine.
        public let b: B

        /// A third publisher to combine.
        public let c: C

        /// Creates a publisher that combines the latest elements of three publishers.
        public init(_ a: A, _ b: B, _ c: C) {
            self.a = a
            self.b = b
            self.c = c
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            typealias Storage = LatestStorage3<A.Output, B.Output, C.Output>
            let inner = CombiningInner<S, Storage>(downstream: subscriber)
            subscriber.receive(subscription: inner)
            a.subscribe(
                inner.makeSide(0) {
                    $0.a = $1; $0.changed = true
                }
            )
            b.subscribe(
                inner.makeSide(1) {
                    $0.b = $1; $0.changed = true
                }
            )
            c.subscribe(
                inner.makeSide(2) {
                    $0.c = $1; $0.changed = true
                }
            )
        }
    }

    /// A publisher that receives and combines the latest elements from four publishers.
    ///
    /// **Ownership:** a value type; each subscription retains its subscriber and the upstream
    /// subscriptions until it completes or is cancelled.
    ///
    /// **Thread safety:** safe to subscribe from any thread; deliveries are serialized.
    public struct CombineLatest4<A: Publisher, B: Publisher, C: Publisher, D: Publisher>: Publisher
    where A.Failure == B.Failure, B.Failure == C.Failure, C.Failure == D.Failure {
        public typealias Output = (A.Output, B.Output, C.Output, D.Output)
        public typealias Failure = A.Failure

        /// A publisher to combine.
        public let a: A

        /// A second publisher to combine.
        public let b: B

        /// A third publisher to combine.
        public let c: C

        /// A fourth publisher to combine.
        public let d: D

        /// Creates a publisher that combines the latest elements of four publishers.
        public init(_ a: A, _ b: B, _ c: C, _ d: D) {
            self.a = a
            self.b = b
            self.c = c
            self.d = d
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            typealias Storage = LatestStorage4<A.Output, B.Output, C.Output, D.Output>
            let inner = CombiningInner<S, Storage>(downstream: subscriber)
            subscriber.receive(subscription: inner)
            a.subscribe(
                inner.makeSide(0) {
                    $0.a = $1; $0.changed = true
                }
            )
            b.subscribe(
                inner.makeSide(1) {
                    $0.b = $1; $0.changed = true
                }
            )
            c.subscribe(
                inner.makeSide(2) {
                    $0.c = $1; $0.changed = true
                }
            )
            d.subscribe(
                inner.makeSide(3) {
                    $0.d = $1; $0.changed = true
                }
            )
        }
    }
}

extension Publishers.CombineLatest: Equatable where A: Equatable, B: Equatable {}

extension Publishers.CombineLatest3: Equatable where A: Equatable, B: Equatable, C: Equatable {}

extension Publishers.CombineLatest4: Equatable where A: Equatable, B: Equatable, C: Equatable, D: Equatable {}

/// The latest value of each of two sides, and whether one changed since the last output.
@usableFromInline
internal struct LatestStorage2<A, B>: CombiningStorage {
    @usableFromInline
    static var operatorName: String { "CombineLatest" }

    @inlinable
    init() {}

    @usableFromInline var a: A?
    @usableFromInline var b: B?
    @usableFromInline var changed = false

    @inlinable
    mutating func takeOutput() -> (A, B)? {
        guard changed, let a, let b else { return nil }
        changed = false
        return (a, b)
    }

    @inlinable
    var hasOutput: Bool { changed && a != nil && b != nil }

    @inlinable
    func isExhausted(finishedSides: UInt8) -> Bool {
        finishedSides == 0b11
    }
}

/// The latest value of each of three sides, and whether one changed since the last output.
@usableFromInline
internal struct LatestStorage3<A, B, C>: CombiningStorage {
    @usableFromInline
    static var operatorName: String { "CombineLatest" }

    @inlinable
    init() {}

    @usableFromInline var a: A?
    @usableFromInline var b: B?
    @usableFromInline var c: C?
    @usableFromInline var changed = false

    @inlinable
    mutating func takeOutput() -> (A, B, C)? {
        guard changed, let a, let b, let c else { return nil }
        changed = false
        return (a, b, c)
    }

    @inlinable
    var hasOutput: Bool { changed && a != nil && b != nil && c != nil }

    @inlinable
    func isExhausted(finishedSides: UInt8) -> Bool {
        finishedSides == 0b111
    }
}

/// The latest value of each of four sides, and whether one changed since the last output.
@usableFromInline
internal struct LatestStorage4<A, B, C, D>: CombiningStorage {
    @usableFromInline
    static var operatorName: String { "CombineLatest" }

    @inlinable
    init() {}

    @usableFromInline var a: A?
    @usableFromInline var b: B?
    @usableFromInline var c: C?
    @usableFromInline var d: D?
    @usableFromInline var changed = false

    @inlinable
    mutating func takeOutput() -> (A, B, C, D)? {
        guard changed, let a, let b, let c, let d else { return nil }
        changed = false
        return (a, b, c, d)
    }

    @inlinable
    var hasOutput: Bool { changed && a != nil && b != nil && c != nil && d != nil }

    @inlinable
    func isExhausted(finishedSides: UInt8) -> Bool {
        finishedSides == 0b1111
    }
}
