extension Publisher {
    /// Prints log messages for all publishing events, in Combine's format.
    ///
    /// Each line is `prefix: event` (or just `event` for an empty prefix): `receive subscription:
    /// (Name)`, `request unlimited`, `request max: (n)`, `receive value: (v)`, `receive finished`,
    /// `receive error: (e)`, `receive cancel`; demand that downstream returns from `receive(_:)`
    /// is logged with ` (synchronous)` after it.
    ///
    ///     let cancellable = Just(1)
    ///         .print("x")
    ///         .sink { _ in }
    ///     // Prints: x: receive subscription: (Just), x: request unlimited,
    ///     //         x: receive value: (1), x: receive finished (one per line)
    ///
    /// - Parameters:
    ///   - prefix: A string with which to prefix all log messages.
    ///   - stream: A stream for text output that receives messages; `nil` prints to standard output.
    /// - Returns: A publisher that prints log messages for all publishing events.
    public func print(_ prefix: String = "", to stream: (any TextOutputStream)? = nil) -> Publishers.Print<Self> {
        Publishers.Print(upstream: self, prefix: prefix, to: stream)
    }
}

extension Publishers {
    /// A publisher that prints log messages for all publishing events, optionally prefixed with a
    /// given string.
    ///
    /// **Ownership:** a value; each subscription keeps its own copy of the stream.
    ///
    /// **Thread safety:** value type; writes to the stream are serialized by a lock, so a stream
    /// must not log through the same chain.
    public struct Print<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Upstream.Failure

        /// A string with which to prefix all log messages.
        public let prefix: String

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// A stream for text output that receives messages; `nil` prints to standard output.
        public let stream: (any TextOutputStream)?

        /// Creates a publisher that prints log messages for all publishing events.
        public init(upstream: Upstream, prefix: String, to stream: (any TextOutputStream)? = nil) {
            self.upstream = upstream
            self.prefix = prefix
            self.stream = stream
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            upstream.subscribe(Inner(downstream: subscriber, prefix: prefix, stream: stream))
        }
    }
}

extension Publishers.Print {
    /// The subscription of `print`: logs each event, then passes it on.
    ///
    /// **Ownership:** retained by upstream and downstream; releases both on completion or cancel.
    ///
    /// **Thread safety:** `request` and `cancel` are safe from any thread.
    private final class Inner<Downstream: Subscriber>: Subscriber, Subscription, CustomStringConvertible,
        CustomPlaygroundDisplayConvertible
    where Downstream.Input == Output, Downstream.Failure == Failure {
        typealias Input = Output
        typealias Failure = Upstream.Failure

        private let lock = Lock()
        private var machine: ForwardingStateMachine<Downstream>  // Guarded by lock.
        private let streamLock = Lock()
        private var stream: (any TextOutputStream)?  // Guarded by streamLock.
        private let prefix: String

        init(downstream: Downstream, prefix: String, stream: (any TextOutputStream)?) {
            machine = ForwardingStateMachine(downstream: downstream)
            self.prefix = prefix.isEmpty ? "" : "\(prefix): "
            self.stream = stream
        }

        var description: String { "Print" }

        var playgroundDescription: Any { description }

        func receive(subscription: any Subscription) {
            log("receive subscription: (\(subscription))")
            guard let downstream = lock.withLock({ machine.subscriptionReceived(subscription) }) else {
                subscription.cancel()
                return
            }
            downstream.receive(subscription: self)
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            log("receive value: (\(input))")
            guard let downstream = lock.withLock({ machine.downstreamForValue() }) else { return .none }
            let demand = downstream.receive(input)
            if demand != .none { log("request \(Self.describe(demand)) (synchronous)") }
            return demand
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            switch completion {
            case .finished: log("receive finished")
            case .failure(let error): log("receive error: (\(error))")
            }
            lock.withLock { machine.upstreamCompleted() }?.receive(completion: completion)
        }

        func request(_ demand: Subscribers.Demand) {
            if demand == .none { apiViolation("demand must not be zero") }
            log("request \(Self.describe(demand))")
            lock.withLock { machine.upstreamForDemand() }?.request(demand)
        }

        func cancel() {
            log("receive cancel")
            lock.withLock { machine.cancelled() }?.cancel()
        }

        private static func describe(_ demand: Subscribers.Demand) -> String {
            demand.max.map { "max: (\($0))" } ?? "unlimited"
        }

        private func log(_ event: String) {
            let line = prefix + event
            streamLock.withLock {
                if stream != nil {
                    // Two writes, line then newline, as Swift's `print(_:to:)` makes them.
                    stream!.write(line)
                    stream!.write("\n")
                } else {
                    Swift.print(line)
                }
            }
        }
    }
}
