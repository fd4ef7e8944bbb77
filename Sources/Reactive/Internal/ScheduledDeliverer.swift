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

extension ScheduledDeliverer where Self: Subscription {
    /// Upstream's subscription arrived: hands this subscription downstream, or cancels one that comes
    /// second (or after cancel). A ``ScheduledDelivery/DemandMode/counted`` deliverer then asks
    /// upstream for `.unlimited`: downstream's demand is counted in the core instead.
    func acceptSubscription(_ subscription: any Subscription) {
        guard let downstream = withDelivery({ $0.subscriptionReceived(subscription) }) else {
            subscription.cancel()
            return
        }
        downstream.receive(subscription: self)
        if withDelivery({ $0.demandMode }) == .counted { subscription.request(.unlimited) }
    }

    /// Downstream asked for more: ``ScheduledDelivery/DemandMode/counted`` adds it to the core's
    /// count (a demand of zero adds nothing; Combine does not trap on it);
    /// ``ScheduledDelivery/DemandMode/forwarded`` passes it upstream as it is, a demand of zero too,
    /// as Combine passes it: upstream decides what it means.
    func demandArrived(_ demand: Subscribers.Demand) {
        withDelivery { $0.demandRequested(demand) }?.request(demand)
    }
}
