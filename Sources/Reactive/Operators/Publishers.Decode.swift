extension Publisher {
    /// Decodes the output from the upstream using a specified decoder.
    ///
    /// A decoding error fails the stream and cancels upstream.
    ///
    ///     let cancellable = Just(Data("[1,2]".utf8))
    ///         .decode(type: [Int].self, decoder: JSONDecoder())
    ///         .sink(receiveCompletion: { _ in }, receiveValue: { print($0) })
    ///     // Prints: [1, 2]
    ///
    /// - Parameters:
    ///   - type: The encoded data to decode into a struct that conforms to `Decodable`.
    ///   - decoder: A decoder that implements ``TopLevelDecoder``.
    /// - Returns: A publisher that decodes a given type using a specified decoder.
    public func decode<Item: Decodable, Coder: TopLevelDecoder>(
        type: Item.Type,
        decoder: Coder
    ) -> Publishers.Decode<Self, Item, Coder> where Output == Coder.Input {
        Publishers.Decode(upstream: self, decoder: decoder)
    }
}

extension Publishers {
    /// A publisher that decodes each upstream element with a ``TopLevelDecoder``.
    ///
    /// **Ownership:** a value; its subscription retains the decoder until the stream ends.
    ///
    /// **Thread safety:** value type; the decoder runs on whatever thread upstream delivers on.
    public struct Decode<Upstream: Publisher, Output: Decodable, Coder: TopLevelDecoder>: Publisher
    where Upstream.Output == Coder.Input {
        public typealias Failure = any Error

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        private let decoder: Coder

        /// Creates a publisher that decodes the elements of `upstream` with `decoder`.
        public init(upstream: Upstream, decoder: Coder) {
            self.upstream = upstream
            self.decoder = decoder
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let decoder = decoder
            let forwarding = CodingForwarding<Upstream.Output, Output, Upstream.Failure>(name: "Decode") {
                try decoder.decode(Output.self, from: $0)
            }
            upstream.subscribe(ForwardingInner(forwarding: forwarding, downstream: subscriber))
        }
    }
}

/// The step of `decode` and `encode`: convert, or fail with what the coder threw.
internal struct CodingForwarding<Input, Output, UpstreamFailure: Error>: Forwarding {
    typealias Failure = any Error

    let name: String
    let convert: (Input) throws -> Output

    mutating func receive(_ input: Input) -> ForwardingStep<Output, any Error> {
        do {
            return .send(try convert(input))
        } catch {
            return .fail(error)
        }
    }

    func failure(from error: UpstreamFailure) -> any Error { error }
}
