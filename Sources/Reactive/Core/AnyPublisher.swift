/// A publisher that hides the type of the publisher it wraps.
///
/// Use ``Publisher/eraseToAnyPublisher()`` to expose a chain across an API boundary
/// without exposing its concrete operator types.
///
/// **Ownership:** retains the wrapped publisher.
///
/// **Thread safety:** as thread-safe as the wrapped publisher.
@frozen
public struct AnyPublisher<Output, Failure: Error>: Publisher, CustomStringConvertible {
    @usableFromInline
    internal let box: PublisherBoxBase<Output, Failure>

    /// Wraps the given publisher.
    @inlinable
    public init<P: Publisher>(_ publisher: P) where P.Output == Output, P.Failure == Failure {
        if let erased = publisher as? AnyPublisher<Output, Failure> {
            box = erased.box
        } else {
            box = PublisherBox(publisher)
        }
    }

    public var description: String { "AnyPublisher" }

    @inlinable
    public func receive<S: Subscriber>(subscriber: S) where Output == S.Input, Failure == S.Failure {
        box.receive(subscriber: subscriber)
    }
}

extension Publisher {
    /// Wraps this publisher in a type eraser.
    ///
    ///     let erased: AnyPublisher<Int, Never> = Just(1).map { $0 + 1 }.eraseToAnyPublisher()
    ///     erased.sink { print($0) }
    ///     // Prints: 2
    @inlinable
    public func eraseToAnyPublisher() -> AnyPublisher<Output, Failure> {
        AnyPublisher(self)
    }
}

/// The abstract box behind ``AnyPublisher``; its one subclass holds the concrete publisher.
///
/// Audited: no lock needed because it is immutable.
@usableFromInline
internal class PublisherBoxBase<Output, Failure: Error>: @unchecked Sendable {
    @inlinable
    internal init() {}

    @inlinable
    internal func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        preconditionFailure("internal inconsistency: abstract PublisherBoxBase.receive called")
    }
}

/// Holds the concrete publisher behind an ``AnyPublisher``.
///
/// Audited: no lock needed because it is immutable.
@usableFromInline
internal final class PublisherBox<Base: Publisher>: PublisherBoxBase<Base.Output, Base.Failure>, @unchecked Sendable {
    @usableFromInline
    internal let base: Base

    @inlinable
    internal init(_ base: Base) {
        self.base = base
        super.init()
    }

    @inlinable
    override internal func receive<S: Subscriber>(subscriber: S)
    where S.Input == Base.Output, S.Failure == Base.Failure {
        base.receive(subscriber: subscriber)
    }
}
