import Foundation

extension Publisher {
    /// Raises a debugger signal when a provided closure needs to stop the process in the debugger.
    ///
    /// When a closure returns `true`, the process receives `SIGTRAP`; a process not run under a
    /// debugger stops there. Every event is republished unchanged.
    ///
    ///     let cancellable = [1, 2, 3].publisher
    ///         .breakpoint(receiveOutput: { $0 == 42 })
    ///         .sink { print($0) }
    ///     // Prints: 1 2 3 (one per line)
    ///
    /// - Parameters:
    ///   - receiveSubscription: Returns `true` to stop on the subscription.
    ///   - receiveOutput: Returns `true` to stop on an element.
    ///   - receiveCompletion: Returns `true` to stop on the completion.
    /// - Returns: A publisher that raises a debugger signal when one of the closures returns `true`.
    public func breakpoint(
        receiveSubscription: ((any Subscription) -> Bool)? = nil,
        receiveOutput: ((Output) -> Bool)? = nil,
        receiveCompletion: ((Subscribers.Completion<Failure>) -> Bool)? = nil
    ) -> Publishers.Breakpoint<Self> {
        Publishers.Breakpoint(
            upstream: self,
            receiveSubscription: receiveSubscription,
            receiveOutput: receiveOutput,
            receiveCompletion: receiveCompletion
        )
    }

    /// Raises a debugger signal upon receiving a failure.
    ///
    ///     let cancellable = [1].publisher
    ///         .breakpointOnError()
    ///         .sink { print($0) }
    ///     // Prints: 1
    ///
    /// - Returns: A publisher that raises a debugger signal upon receiving a failure.
    public func breakpointOnError() -> Publishers.Breakpoint<Self> {
        breakpoint(receiveCompletion: { completion in
            if case .failure = completion { return true }
            return false
        })
    }
}

extension Publishers {
    /// A publisher that raises a debugger signal when a provided closure needs to stop the process.
    ///
    /// **Ownership:** a value; its subscriber retains the closures until the stream ends.
    ///
    /// **Thread safety:** value type; the closures run on whatever thread upstream delivers on.
    public struct Breakpoint<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// A closure that runs on the subscription; `true` stops in the debugger.
        public let receiveSubscription: ((any Subscription) -> Bool)?

        /// A closure that runs on each element; `true` stops in the debugger.
        public let receiveOutput: ((Upstream.Output) -> Bool)?

        /// A closure that runs on the completion; `true` stops in the debugger.
        public let receiveCompletion: ((Subscribers.Completion<Failure>) -> Bool)?

        /// Creates a breakpoint publisher with the provided upstream publisher and breakpoint closures.
        public init(
            upstream: Upstream,
            receiveSubscription: ((any Subscription) -> Bool)? = nil,
            receiveOutput: ((Upstream.Output) -> Bool)? = nil,
            receiveCompletion: ((Subscribers.Completion<Failure>) -> Bool)? = nil
        ) {
            self.upstream = upstream
            self.receiveSubscription = receiveSubscription
            self.receiveOutput = receiveOutput
            self.receiveCompletion = receiveCompletion
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(downstream: subscriber, publisher: self))
        }
    }
}

extension Publishers.Breakpoint {
    // A value type that hands upstream's subscription straight to downstream.
    private struct Inner<Downstream: Subscriber>: Subscriber, CustomStringConvertible
    where Downstream.Input == Output, Downstream.Failure == Failure {
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure

        let combineIdentifier = CombineIdentifier()
        let downstream: Downstream
        let publisher: Publishers.Breakpoint<Upstream>

        var description: String { "Breakpoint" }

        func receive(subscription: any Subscription) {
            if publisher.receiveSubscription?(subscription) == true { raise(SIGTRAP) }
            downstream.receive(subscription: subscription)
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            if publisher.receiveOutput?(input) == true { raise(SIGTRAP) }
            return downstream.receive(input)
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            if publisher.receiveCompletion?(completion) == true { raise(SIGTRAP) }
            downstream.receive(completion: completion)
        }
    }
}
