extension Publisher where Output: Encodable {
    /// Encodes the output from upstream using a specified encoder.
    ///
    /// An encoding error fails the stream and cancels upstream.
    ///
    ///     let cancellable = Just([1, 2])
    ///         .encode(encoder: JSONEncoder())
    ///         .sink(receiveCompletion: { _ in }, receiveValue: { print(String(decoding: $0, as: UTF8.self)) })
    ///     // Prints: [1,2]
    ///
    /// - Parameter encoder: An encoder that implements ``TopLevelEncoder``.
    /// - Returns: A publisher that encodes received elements using a specified encoder.
    public func encode<Coder: TopLevelEncoder>(encoder: Coder) -> Publishers.Encode<Self, Coder> {
        Publishers.Encode(upstream: self, encoder: encoder)
    }
}

extension Publishers {
    /// A publisher that encodes each upstream element with a ``TopLevelEncoder``.
    ///
    /// **Ownership:** a value; its subscription retains the encoder until the stream ends.
    ///
    /// **Thread safety:** value type; the encoder runs on whatever thread upstream delivers on.
    public struct Encode<Upstream: Publisher, Coder: TopLevelEncoder>: Publisher where Upstream.Output: Encodable {
        public typealias Output = Coder.Output
        public typealias Failure = any Error

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        private let encoder: Coder

        /// Creates a publisher that encodes the elements of `upstream` with `encoder`.
        public init(upstream: Upstream, encoder: Coder) {
            self.upstream = upstream
            self.encoder = encoder
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let encoder = encoder
            let forwarding = CodingForwarding<Upstream.Output, Output, Upstream.Failure>(name: "Encode") {
                try encoder.encode($0)
            }
            upstream.subscribe(ForwardingInner(forwarding: forwarding, downstream: subscriber))
        }
    }
}
