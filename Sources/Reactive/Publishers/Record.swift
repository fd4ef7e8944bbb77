/// A publisher that allows for recording a series of inputs and a completion, for later playback
/// to each subscriber.
///
///     let record = Record<Int, Never> { $0.receive(1); $0.receive(2); $0.receive(completion: .finished) }
///     let cancellable = record.sink { print($0) }
///     // Prints: 1
///     //         2
///
/// **Ownership:** a value type holding the recording; each subscription holds an iterator over it.
///
/// **Thread safety:** value type; subscribing is safe from any thread.
public struct Record<Output, Failure: Error>: Publisher {
    /// The recorded output and completion.
    public let recording: Recording

    /// Creates a publisher to interactively record a series of outputs and a completion.
    ///
    /// - Parameter record: A closure that records values and, optionally, a completion; a recording
    ///   left without a completion finishes normally.
    public init(record: (inout Recording) -> Void) {
        var recording = Recording()
        record(&recording)
        self.recording = recording
    }

    /// Creates a record publisher from an existing recording.
    public init(recording: Recording) {
        self.recording = recording
    }

    /// Creates a record publisher to publish the provided series of outputs, followed by the completion.
    public init(output: [Output], completion: Subscribers.Completion<Failure>) {
        self.init(recording: Recording(output: output, completion: completion))
    }

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        IteratingSubscription.subscribe(
            subscriber,
            to: recording.output.makeIterator(),
            completion: recording.completion,
            name: "Record"
        )
    }

    /// A recorded sequence of outputs, followed by a completion.
    ///
    /// **Thread safety:** value type; not shared.
    public struct Recording {
        public typealias Input = Output

        /// The output which will be sent to a subscriber.
        public private(set) var output: [Output]

        /// The completion which will be sent to a subscriber: `.finished` until one is recorded.
        public var completion: Subscribers.Completion<Failure> {
            recordedCompletion ?? .finished
        }

        private var recordedCompletion: Subscribers.Completion<Failure>?

        /// Sets up a recording in a state ready to receive output.
        public init() {
            output = []
        }

        /// Sets up a complete recording with the specified output and completion.
        public init(output: [Output], completion: Subscribers.Completion<Failure> = .finished) {
            self.output = output
            self.recordedCompletion = completion
        }

        /// Adds an output to the recording.
        ///
        /// > Warning: Recording an output after the completion is misuse of the API and traps.
        public mutating func receive(_ input: Recording.Input) {
            if recordedCompletion != nil {
                apiViolation("a Record.Recording received an output after its completion")
            }
            output.append(input)
        }

        /// Adds a completion to the recording.
        ///
        /// > Warning: Recording a second completion is misuse of the API and traps.
        public mutating func receive(completion: Subscribers.Completion<Failure>) {
            if recordedCompletion != nil {
                apiViolation("a Record.Recording received a second completion")
            }
            recordedCompletion = completion
        }
    }
}

extension Record.Recording: Codable where Output: Codable, Failure: Codable {
    private enum CodingKeys: String, CodingKey {
        case output
        case completion
    }

    private enum CompletionKeys: String, CodingKey {
        case success
        case error
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        output = try container.decode([Output].self, forKey: .output)
        let completionContainer = try container.nestedContainer(keyedBy: CompletionKeys.self, forKey: .completion)
        if try completionContainer.decode(Bool.self, forKey: .success) {
            recordedCompletion = .finished
        } else {
            recordedCompletion = .failure(try completionContainer.decode(Failure.self, forKey: .error))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(output, forKey: .output)
        var completionContainer = container.nestedContainer(keyedBy: CompletionKeys.self, forKey: .completion)
        switch completion {
        case .finished:
            try completionContainer.encode(true, forKey: .success)
        case .failure(let error):
            try completionContainer.encode(false, forKey: .success)
            try completionContainer.encode(error, forKey: .error)
        }
    }
}

extension Record: Codable where Output: Codable, Failure: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(recording: try Recording(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        try recording.encode(to: encoder)
    }
}
