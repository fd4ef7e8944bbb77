// `ForwardingInner` runs a `Forwarding`: passes demand straight through, and for each value sends,
// drops (asking upstream for one more), or ends the stream by finishing or failing, cancelling
// upstream. The `try` operators, `prefix`, `output(in:)`, `removeDuplicates`, … use it.

/// What a forwarding operator does with each value; ``ForwardingInner`` does the rest.
///
/// **Thread safety:** value type, owned by one ``ForwardingInner`` and touched only on the
/// upstream's serialized `receive` path (and once on subscription, for ``isExhausted``).
internal protocol Forwarding {
    associatedtype Input
    associatedtype Output
    associatedtype UpstreamFailure: Error
    associatedtype Failure: Error

    /// The operator's name; the description of its subscription.
    var name: String { get }

    /// True when the operator will forward nothing at all (`prefix(0)`): it finishes as soon as
    /// it is subscribed.
    var isExhausted: Bool { get }

    /// Decides what to do with one value. Runs outside any lock.
    mutating func receive(_ input: Input) -> ForwardingStep<Output, Failure>

    /// The operator's failure for an upstream failure.
    func failure(from error: UpstreamFailure) -> Failure
}

extension Forwarding {
    var isExhausted: Bool { false }
}

extension Forwarding where UpstreamFailure == Failure {
    func failure(from error: UpstreamFailure) -> Failure { error }
}

/// What a ``Forwarding`` decided about one value.
internal enum ForwardingStep<Output, Failure: Error> {
    /// Send it downstream; downstream's answer is the demand returned upstream.
    case send(Output)
    /// Drop it and ask upstream for one more in its place.
    case drop
    /// Cancel upstream, send it downstream, and finish.
    case sendAndFinish(Output)
    /// Cancel upstream and finish.
    case finish
    /// Cancel upstream and fail.
    case fail(Failure)
}
