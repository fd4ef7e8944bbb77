extension Publisher {
    /// Combines elements from this publisher with those from seven other publishers, delivering
    /// an interleaved sequence of elements.
    ///
    ///     let merged = Just(1).merge(with: Just(2), Just(3), Just(4), Just(5), Just(6), Just(7), Just(8))
    ///     let cancellable = merged.sink { print($0) }
    ///     // Prints: 1 2 3 4 5 6 7 8 (one per line)
    ///
    /// - Returns: A publisher that emits an event when any upstream publisher emits an event.
    public func merge<B: Publisher, C: Publisher, D: Publisher, E: Publisher, F: Publisher, G: Publisher, H: Publisher>(
        with b: B,
        _ c: C,
        _ d: D,
        _ e: E,
        _ f: F,
        _ g: G,
        _ h: H
    ) -> Publishers.Merge8<Self, B, C, D, E, F, G, H>
    where
        Failure == B.Failure, Output == B.Output,
        Failure == C.Failure, Output == C.Output,
        Failure == D.Failure, Output == D.Output,
        Failure == E.Failure, Output == E.Output,
        Failure == F.Failure, Output == F.Output,
        Failure == G.Failure, Output == G.Output,
        Failure == H.Failure, Output == H.Output
    {
        Publishers.Merge8(self, b, c, d, e, f, g, h)
    }
}

extension Publishers {
    /// A publisher created by applying the merge function to eight upstream publishers.
    ///
    /// **Ownership:** a value type; each subscription retains its subscriber and the upstream
    /// subscriptions until it completes or is cancelled.
    ///
    /// **Thread safety:** safe to subscribe from any thread; deliveries are serialized.
    public struct Merge8<
        A: Publisher,
        B: Publisher,
        C: Publisher,
        D: Publisher,
        E: Publisher,
        F: Publisher,
        G: Publisher,
        H: Publisher
    >: Publisher
    where
        A.Failure == B.Failure, A.Output == B.Output,
        A.Failure == C.Failure, A.Output == C.Output,
        A.Failure == D.Failure, A.Output == D.Output,
        A.Failure == E.Failure, A.Output == E.Output,
        A.Failure == F.Failure, A.Output == F.Output,
        A.Failure == G.Failure, A.Output == G.Output,
        A.Failure == H.Failure, A.Output == H.Output
    {
        public typealias Output = A.Output
        public typealias Failure = A.Failure

        /// A publisher to merge.
        public let a: A

        /// A second publisher to merge.
        public let b: B

        /// A third publisher to merge.
        public let c: C

        /// A fourth publisher to merge.
        public let d: D

        /// A fifth publisher to merge.
        public let e: E

        /// A sixth publisher to merge.
        public let f: F

        /// A seventh publisher to merge.
        public let g: G

        /// An eighth publisher to merge.
        public let h: H

        /// Creates a publisher created by applying the merge function to eight upstream publishers.
        public init(_ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G, _ h: H) {
            self.a = a
            self.b = b
            self.c = c
            self.d = d
            self.e = e
            self.f = f
            self.g = g
            self.h = h
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = FlatMapInner(downstream: subscriber, maxPublishers: .unlimited, name: "Merge")
            subscriber.receive(subscription: inner)
            inner.addChild(a)
            inner.addChild(b)
            inner.addChild(c)
            inner.addChild(d)
            inner.addChild(e)
            inner.addChild(f)
            inner.addChild(g)
            inner.addChild(h)
            inner.outerCompleted(.finished)
        }
    }
}

extension Publishers.Merge8: Equatable
where A: Equatable, B: Equatable, C: Equatable, D: Equatable, E: Equatable, F: Equatable, G: Equatable, H: Equatable {}
