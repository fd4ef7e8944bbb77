// `ForwardingInner` runs a `Forwarding`: passes demand straight through, and for each value sends,
// drops (asking upstream for one more, or not when the demand already sent covers it), or ends the
// stream by finishing or failing, cancelling upstream. The `try` operators, `prefix`, `output(in:)`,
// `removeDuplicates`, `dropFirst`, `collect(_:)`, … use it.

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

    /// How downstream's demand becomes upstream's; read once, when the subscription is made.
    var demandPolicy: ForwardingDemandPolicy { get }

    /// Decides what to do with one value. Runs outside any lock.
    mutating func receive(_ input: Input) -> ForwardingStep<Output, Failure>

    /// A last value to send when upstream finishes normally (`collect(_:)`'s partial batch); `nil`
    /// sends none. Upstream's demand for the values it holds covers it. Runs outside any lock.
    mutating func outputOnFinish() -> Output?

    /// The operator's failure for an upstream failure.
    func failure(from error: UpstreamFailure) -> Failure
}

extension Forwarding {
    var isExhausted: Bool { false }

    var demandPolicy: ForwardingDemandPolicy { .passThrough }

    mutating func outputOnFinish() -> Output? { nil }
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
    /// Drop it without asking for more: the demand already sent upstream counted it (`dropFirst`'s
    /// grown first request, `collect(_:)`'s values of a batch not yet full).
    case skip
    /// Cancel upstream, send it downstream, and finish.
    case sendAndFinish(Output)
    /// Cancel upstream and finish.
    case finish
    /// Cancel upstream and fail.
    case fail(Failure)
}

/// How a ``ForwardingInner`` turns downstream's demand into upstream's.
internal enum ForwardingDemandPolicy {
    /// The same demand.
    case passThrough
    /// The first request grown by the count, so that the values `dropFirst` omits do not use up
    /// downstream's demand; later requests as they are.
    case firstRequestGrown(by: Int)
    /// Every unit of demand is `count` values upstream (`collect(_:)`'s batches), demand returned
    /// from `receive(_:)` too.
    case multiplied(by: Int)

    /// Upstream's demand for `demand` from downstream; `isFirstRequest` for downstream's first
    /// `request(_:)` (demand returned from `receive(_:)` is never the first).
    func upstreamDemand(for demand: Subscribers.Demand, isFirstRequest: Bool) -> Subscribers.Demand {
        switch self {
        case .passThrough: demand
        case .firstRequestGrown(let count): isFirstRequest ? demand + count : demand
        case .multiplied(let count): demand * count
        }
    }
}
