extension Publisher {
    /// Combines elements from this publisher with those from three other publishers, delivering
    /// an interleaved sequence of elements.
    ///
    ///     let merged = Just(1).merge(with: Just(2), Just(3), Just(4))
    ///     let cancellable = merged.sink { print($0) }
    ///     // Prints: 1 2 3 4 (one per line)
    ///
    /// - Returns: A publisher that emits an event when any upstream publisher emits an event.
    public func merge<B: Publisher, C: Publisher, D: Publisher>(
        with b: B,
        _ c: C,
        _ d: D
    ) -> Publishers.Merge4<Self, B, C, D>
    where
        Failure == B.Failure, Output == B.Output,
        Failure == C.Failure, Output == C.Output,
        Failure == D.Failure, Output == D.Output
    {
        Publishers.Merge4(self, b, c, d)
    }
}

extension Publishers {
    /// A publisher created by applying the merge function to four upstream publishers.
    ///
    /// **Ownership:** a value type; each subscription retains its subscriber and the upstream
    /// subscriptions until it completes or is cancelled.
    ///
    /// **Thread safety:** safe to subscribe from any thread; deliveries are serialized.
    public struct Merge4<A: Publisher, B: Publisher, C: Publisher, D: Publisher>: Publisher
    where
        A.Failure == B.Failure, A.Output == B.Output,
        A.Failure == C.Failure, A.Output == C.Output,
        A.Failure == D.Failure, A.Output == D.Output
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

        /// Creates a publisher created by applying the merge function to four upstream publishers.
        public init(_ a: A, _ b: B, _ c: C, _ d: D) {
            self.a = a
            self.b = b
            self.c = c
            self.d = d
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = FlatMapInner(downstream: subscriber, maxPublishers: .unlimited, name: "Merge")
            subscriber.receive(subscription: inner)
            inner.addChild(a)
            inner.addChild(b)
            inner.addChild(c)
            inner.addChild(d)
            inner.outerCompleted(.finished)
        }

        /// Adds another publisher to this merge, giving one flat `Merge5` rather than a nested merge.
        ///
        ///     let merged = Just(1).merge(with: Just(2), Just(3), Just(4)).merge(with: Just(5))
        ///     let cancellable = merged.sink { print($0) }  // merged is a Merge5
        ///     // Prints: 1 2 3 4 5 (one per line)
        public func merge<P: Publisher>(with other: P) -> Publishers.Merge5<A, B, C, D, P>
        where Failure == P.Failure, Output == P.Output {
            Publishers.Merge5(a, b, c, d, other)
        }

        /// Adds two more publishers to this merge, giving one flat `Merge6` rather than a nested merge.
        ///
        ///     let merged = Just(1).merge(with: Just(2), Just(3), Just(4)).merge(with: Just(5), Just(6))
        ///     let cancellable = merged.sink { print($0) }  // merged is a Merge6
        ///     // Prints: 1 2 3 4 5 6 (one per line)
        public func merge<Z: Publisher, Y: Publisher>(with z: Z, _ y: Y) -> Publishers.Merge6<A, B, C, D, Z, Y>
        where Failure == Z.Failure, Output == Z.Output, Failure == Y.Failure, Output == Y.Output {
            Publishers.Merge6(a, b, c, d, z, y)
        }

        /// Adds three more publishers to this merge, giving one flat `Merge7` rather than a nested merge.
        ///
        ///     let merged = Just(1).merge(with: Just(2), Just(3), Just(4)).merge(with: Just(5), Just(6), Just(7))
        ///     let cancellable = merged.sink { print($0) }  // merged is a Merge7
        ///     // Prints: 1 2 3 4 5 6 7 (one per line)
        public func merge<Z: Publisher, Y: Publisher, X: Publisher>(
            with z: Z,
            _ y: Y,
            _ x: X
        ) -> Publishers.Merge7<A, B, C, D, Z, Y, X>
        where
            Failure == Z.Failure, Output == Z.Output,
            Failure == Y.Failure, Output == Y.Output,
            Failure == X.Failure, Output == X.Output
        {
            Publishers.Merge7(a, b, c, d, z, y, x)
        }

        /// Adds four more publishers to this merge, giving one flat `Merge8` rather than a nested merge.
        ///
        ///     let merged = Just(1).merge(with: Just(2), Just(3), Just(4))
        ///         .merge(with: Just(5), Just(6), Just(7), Just(8))  // a Merge8
        ///     let cancellable = merged.sink { print($0) }
        ///     // Prints: 1 2 3 4 5 6 7 8 (one per line)
        public func merge<Z: Publisher, Y: Publisher, X: Publisher, W: Publisher>(
            with z: Z,
            _ y: Y,
            _ x: X,
            _ w: W
        ) -> Publishers.Merge8<A, B, C, D, Z, Y, X, W>
        where
            Failure == Z.Failure, Output == Z.Output,
            Failure == Y.Failure, Output == Y.Output,
            Failure == X.Failure, Output == X.Output,
            Failure == W.Failure, Output == W.Output
        {
            Publishers.Merge8(a, b, c, d, z, y, x, w)
        }
    }
}

extension Publishers.Merge4: Equatable
where A: Equatable, B: Equatable, C: Equatable, D: Equatable {}
