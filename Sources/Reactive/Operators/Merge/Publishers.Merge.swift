extension Publisher {
    /// Combines elements from this publisher with those from another publisher, delivering an
    /// interleaved sequence of elements.
    ///
    /// Elements are delivered one at a time, in the order they arrive, as downstream demand allows;
    /// while demand is `.unlimited` every upstream is asked for `.unlimited`, otherwise each is asked
    /// for one element at a time. The merged publisher finishes when every upstream finished, and
    /// fails on the first failure, cancelling the others.
    ///
    ///     let a = PassthroughSubject<Int, Never>(), b = PassthroughSubject<Int, Never>()
    ///     let cancellable = a.merge(with: b).sink { print($0) }
    ///     a.send(1); b.send(2); a.send(3)  // Prints: 1 2 3 (one per line)
    ///
    /// - Parameter other: Another publisher.
    /// - Returns: A publisher that emits an event when either upstream publisher emits an event.
    public func merge<P: Publisher>(with other: P) -> Publishers.Merge<Self, P>
    where Failure == P.Failure, Output == P.Output {
        Publishers.Merge(self, other)
    }
}

extension Publishers {
    /// A publisher created by applying the merge function to two upstream publishers.
    ///
    /// **Ownership:** a value type; each subscription retains its subscriber and the upstream
    /// subscriptions until it completes or is cancelled.
    ///
    /// **Thread safety:** safe to subscribe from any thread; deliveries are serialized.
    public struct Merge<A: Publisher, B: Publisher>: Publisher
    where A.Failure == B.Failure, A.Output == B.Output {
        public typealias Output = A.Output
        public typealias Failure = A.Failure

        /// A publisher to merge.
        public let a: A

        /// A second publisher to merge.
        public let b: B

        /// Creates a publisher created by applying the merge function to two upstream publishers.
        public init(_ a: A, _ b: B) {
            self.a = a
            self.b = b
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let inner = FlatMapInner(downstream: subscriber, maxPublishers: .unlimited, name: "Merge")
            subscriber.receive(subscription: inner)
            inner.addChild(a)
            inner.addChild(b)
            inner.outerCompleted(.finished)
        }

        /// Adds another publisher to this merge, giving one flat `Merge3` rather than a nested merge.
        ///
        ///     let merged = Just(1).merge(with: Just(2)).merge(with: Just(3))
        ///     let cancellable = merged.sink { print($0) }  // merged is a Merge3
        ///     // Prints: 1 2 3 (one per line)
        public func merge<P: Publisher>(with other: P) -> Publishers.Merge3<A, B, P>
        where Failure == P.Failure, Output == P.Output {
            Publishers.Merge3(a, b, other)
        }

        /// Adds two more publishers to this merge, giving one flat `Merge4` rather than a nested merge.
        ///
        ///     let merged = Just(1).merge(with: Just(2)).merge(with: Just(3), Just(4))
        ///     let cancellable = merged.sink { print($0) }  // merged is a Merge4
        ///     // Prints: 1 2 3 4 (one per line)
        public func merge<Z: Publisher, Y: Publisher>(with z: Z, _ y: Y) -> Publishers.Merge4<A, B, Z, Y>
        where Failure == Z.Failure, Output == Z.Output, Failure == Y.Failure, Output == Y.Output {
            Publishers.Merge4(a, b, z, y)
        }

        /// Adds three more publishers to this merge, giving one flat `Merge5` rather than a nested merge.
        ///
        ///     let merged = Just(1).merge(with: Just(2)).merge(with: Just(3), Just(4), Just(5))
        ///     let cancellable = merged.sink { print($0) }  // merged is a Merge5
        ///     // Prints: 1 2 3 4 5 (one per line)
        public func merge<Z: Publisher, Y: Publisher, X: Publisher>(
            with z: Z,
            _ y: Y,
            _ x: X
        ) -> Publishers.Merge5<A, B, Z, Y, X>
        where
            Failure == Z.Failure, Output == Z.Output,
            Failure == Y.Failure, Output == Y.Output,
            Failure == X.Failure, Output == X.Output
        {
            Publishers.Merge5(a, b, z, y, x)
        }

        /// Adds four more publishers to this merge, giving one flat `Merge6` rather than a nested merge.
        ///
        ///     let merged = Just(1).merge(with: Just(2)).merge(with: Just(3), Just(4), Just(5), Just(6))
        ///     let cancellable = merged.sink { print($0) }  // merged is a Merge6
        ///     // Prints: 1 2 3 4 5 6 (one per line)
        public func merge<Z: Publisher, Y: Publisher, X: Publisher, W: Publisher>(
            with z: Z,
            _ y: Y,
            _ x: X,
            _ w: W
        ) -> Publishers.Merge6<A, B, Z, Y, X, W>
        where
            Failure == Z.Failure, Output == Z.Output,
            Failure == Y.Failure, Output == Y.Output,
            Failure == X.Failure, Output == X.Output,
            Failure == W.Failure, Output == W.Output
        {
            Publishers.Merge6(a, b, z, y, x, w)
        }

        /// Adds five more publishers to this merge, giving one flat `Merge7` rather than a nested merge.
        ///
        ///     let merged = Just(1).merge(with: Just(2)).merge(with: Just(3), Just(4), Just(5), Just(6), Just(7))
        ///     let cancellable = merged.sink { print($0) }  // merged is a Merge7
        ///     // Prints: 1 2 3 4 5 6 7 (one per line)
        public func merge<Z: Publisher, Y: Publisher, X: Publisher, W: Publisher, V: Publisher>(
            with z: Z,
            _ y: Y,
            _ x: X,
            _ w: W,
            _ v: V
        ) -> Publishers.Merge7<A, B, Z, Y, X, W, V>
        where
            Failure == Z.Failure, Output == Z.Output,
            Failure == Y.Failure, Output == Y.Output,
            Failure == X.Failure, Output == X.Output,
            Failure == W.Failure, Output == W.Output,
            Failure == V.Failure, Output == V.Output
        {
            Publishers.Merge7(a, b, z, y, x, w, v)
        }

        /// Adds six more publishers to this merge, giving one flat `Merge8` rather than a nested merge.
        ///
        ///     let merged = Just(1).merge(with: Just(2))
        ///         .merge(with: Just(3), Just(4), Just(5), Just(6), Just(7), Just(8))  // a Merge8
        ///     let cancellable = merged.sink { print($0) }
        ///     // Prints: 1 2 3 4 5 6 7 8 (one per line)
        public func merge<Z: Publisher, Y: Publisher, X: Publisher, W: Publisher, V: Publisher, U: Publisher>(
            with z: Z,
            _ y: Y,
            _ x: X,
            _ w: W,
            _ v: V,
            _ u: U
        ) -> Publishers.Merge8<A, B, Z, Y, X, W, V, U>
        where
            Failure == Z.Failure, Output == Z.Output,
            Failure == Y.Failure, Output == Y.Output,
            Failure == X.Failure, Output == X.Output,
            Failure == W.Failure, Output == W.Output,
            Failure == V.Failure, Output == V.Output,
            Failure == U.Failure, Output == U.Output
        {
            Publishers.Merge8(a, b, z, y, x, w, v, u)
        }
    }
}

extension Publishers.Merge: Equatable
where A: Equatable, B: Equatable {}
