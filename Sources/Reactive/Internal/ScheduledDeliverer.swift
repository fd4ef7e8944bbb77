/// An operator subscription built on ``ScheduledDelivery``; the extension runs its delivery loop.
///
/// **Thread safety:** implementations guard their core with their lock; the loop calls downstream
/// outside it.
internal protocol ScheduledDeliverer: AnyObject {
    associatedtype Downstream: Subscriber

    /// Runs `body` on the core with the owner's lock held.
    func withDelivery<Result>(_ body: (inout ScheduledDelivery<Downstream>) -> Result) -> Result
}

extension ScheduledDeliverer {
    /// A scheduled action ran (one credit): delivers, or leaves the event to the current deliverer.
    func creditArrived() {
        deliver(withDelivery { $0.creditArrived() })
    }

    /// Delivers `first` and whatever the queue hands this deliverer after it.
    func deliver(_ first: ScheduledDelivery<Downstream>.Delivery?) {
        var next = first
        while let delivery = next {
            var returned = Subscribers.Demand.none
            switch delivery {
            case .value(let downstream, let value):
                returned = downstream.receive(value)
            case .completion(let downstream, let completion):
                downstream.receive(completion: completion)
            }
            let (following, forward) = withDelivery { $0.deliveryFinished(returned: returned) }
            if let forward { forward.request(returned) }
            next = following
        }
    }
}
