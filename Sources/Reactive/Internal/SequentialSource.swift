/// The subscriber an upstream of a sequential operator sees: forwards to its owner, tagged with
/// the upstream's generation.
///
/// **Thread safety:** value type; forwards to an owner that is safe from any thread.
internal struct SequentialSource<Input, Failure: Error>: Subscriber, CustomStringConvertible {
    let combineIdentifier = CombineIdentifier()
    let name: String
    let generation: Int
    let onSubscription: (any Subscription, Int) -> Void
    let onValue: (Input, Int) -> Subscribers.Demand
    let onCompletion: (Subscribers.Completion<Failure>, Int) -> Void

    var description: String { name }

    func receive(subscription: any Subscription) {
        onSubscription(subscription, generation)
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        onValue(input, generation)
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        onCompletion(completion, generation)
    }
}
