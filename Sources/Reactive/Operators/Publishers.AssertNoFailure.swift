extension Publisher {
    /// Raises a fatal error when its upstream publisher fails, and otherwise republishes all
    /// received input.
    ///
    ///     let cancellable = Just(1).setFailureType(to: URLError.self)
    ///         .assertNoFailure()
    ///         .sink { print($0) }
    ///     // Prints: 1
    ///
    /// - Parameters:
    ///   - prefix: A string put at the start of the fatal error message.
    ///   - file: The file name to use in the error message.
    ///   - line: The line number to use in the error message.
    /// - Returns: A publisher that raises a fatal error when its upstream publisher fails.
    public func assertNoFailure(
        _ prefix: String = "",
        file: StaticString = #file,
        line: UInt = #line
    ) -> Publishers.AssertNoFailure<Self> {
        Publishers.AssertNoFailure(upstream: self, prefix: prefix, file: file, line: line)
    }
}

extension Publishers {
    /// A publisher that raises a fatal error upon receiving any failure, and otherwise republishes
    /// all received input.
    ///
    /// **Ownership:** a value; adds nothing to the chain but the check.
    ///
    /// **Thread safety:** value type; safe to subscribe from any thread.
    public struct AssertNoFailure<Upstream: Publisher>: Publisher {
        public typealias Output = Upstream.Output
        public typealias Failure = Never

        /// The publisher from which this publisher receives elements.
        public let upstream: Upstream

        /// The string put at the start of the fatal error message.
        public let prefix: String

        /// The file name used in the error message.
        public let file: StaticString

        /// The line number used in the error message.
        public let line: UInt

        /// Creates a publisher that traps if `upstream` fails.
        public init(upstream: Upstream, prefix: String, file: StaticString, line: UInt) {
            self.upstream = upstream
            self.prefix = prefix
            self.file = file
            self.line = line
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
            let (prefix, file, line) = (prefix, file, line)
            upstream.subscribe(
                FailureConvertingSubscriber("AssertNoFailure", downstream: subscriber) { error in
                    let lead = prefix.isEmpty ? "" : "\(prefix): "
                    fatalError("\(lead)\(error)", file: file, line: line)
                }
            )
        }
    }
}
