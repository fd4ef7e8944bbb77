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
