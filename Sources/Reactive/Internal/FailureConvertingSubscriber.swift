/// The subscriber of the operators that change only how a stream fails (`mapError`,
/// `setFailureType`, `assertNoFailure`): it hands upstream's subscription and values straight to
/// downstream (demand and cancel go directly between them), and passes upstream's completion on
/// with the failure converted by `convert`. `assertNoFailure`'s conversion traps.
///
/// **Ownership:** a value; upstream's subscription holds it, and it holds downstream and `convert`.
///
/// **Thread safety:** no state of its own; `convert` runs on whatever thread upstream completes on.
internal struct FailureConvertingSubscriber<UpstreamFailure: Error, Downstream: Subscriber>: Subscriber,
    CustomStringConvertible
{
    typealias Input = Downstream.Input
    typealias Failure = UpstreamFailure

    let combineIdentifier = CombineIdentifier()
    let description: String
    let downstream: Downstream
    let convert: (UpstreamFailure) -> Downstream.Failure

    init(_ description: String, downstream: Downstream, convert: @escaping (UpstreamFailure) -> Downstream.Failure) {
        self.description = description
        self.downstream = downstream
        self.convert = convert
    }

    func receive(subscription: any Subscription) {
        downstream.receive(subscription: subscription)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        downstream.receive(input)
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        switch completion {
        case .finished:
            downstream.receive(completion: .finished)
        case .failure(let error):
            downstream.receive(completion: .failure(convert(error)))
        }
    }
}
