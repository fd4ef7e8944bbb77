/// A publisher that publishes changes from observable objects: it sends `Void` before each change.
///
/// ``ObservableObject``'s default `objectWillChange` is one of these, shared by all the object's
/// ``Published`` properties, which send through it just before their value changes.
///
///     let publisher = ObservableObjectPublisher()
///     let cancellable = publisher.sink { print("will change") }
///     publisher.send()
///     // Prints: will change
///
/// **Ownership:** retains its subscribers' subscriptions until they complete or cancel.
///
/// **Thread safety:** safe to call from any thread.
public final class ObservableObjectPublisher: Publisher, CustomStringConvertible, Sendable {
    public typealias Output = Void
    public typealias Failure = Never

    // Audited: no lock needed here because the subject is immutable and thread-safe itself.
    private let subject = PassthroughSubject<Void, Never>()

    /// Creates an observable object publisher.
    public init() {}

    public var description: String { "ObservableObjectPublisher" }

    public func receive<S: Subscriber>(subscriber: S) where S.Input == Void, S.Failure == Never {
        subject.receive(subscriber: subscriber)
    }

    /// Sends the changed value to the downstream subscribers.
    public func send() {
        subject.send(())
    }
}
