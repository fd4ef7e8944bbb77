extension Subscribers {
    /// A signal that a publisher has finished, normally or with an error. Sent at most once.
    public enum Completion<Failure: Error> {
        /// The publisher finished normally.
        case finished
        /// The publisher stopped because of the given error.
        case failure(Failure)
    }
}

extension Subscribers.Completion: Equatable where Failure: Equatable {}

extension Subscribers.Completion: Hashable where Failure: Hashable {}

extension Subscribers.Completion: Sendable where Failure: Sendable {}

extension Subscribers.Completion {
    /// The same completion with the error erased to `any Error`; used by the `try` operators.
    @inlinable
    package var eraseError: Subscribers.Completion<any Error> {
        switch self {
        case .finished: .finished
        case .failure(let error): .failure(error)
        }
    }
}

// Combine's coding: a keyed container with `success` (a Bool) and, for a failure, `error`.
extension Subscribers.Completion {
    private enum CodingKeys: String, CodingKey {
        case success
        case error
    }
}

extension Subscribers.Completion: Encodable where Failure: Encodable {
    /// Encodes `{"success": true}` for ``finished`` and `{"success": false, "error": …}` for a
    /// failure, as Combine does.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .finished:
            try container.encode(true, forKey: .success)
        case .failure(let error):
            try container.encode(false, forKey: .success)
            try container.encode(error, forKey: .error)
        }
    }
}

extension Subscribers.Completion: Decodable where Failure: Decodable {
    /// Decodes what ``encode(to:)`` writes.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if try container.decode(Bool.self, forKey: .success) {
            self = .finished
        } else {
            self = .failure(try container.decode(Failure.self, forKey: .error))
        }
    }
}
