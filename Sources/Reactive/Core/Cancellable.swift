/// A protocol indicating that an activity or action supports cancellation.
public protocol Cancellable {
    /// Cancels the activity. Calling it more than once has no further effect.
    func cancel()
}

extension Cancellable {
    /// Stores this cancellable, wrapped in an ``AnyCancellable``, in the given collection.
    public func store<C: RangeReplaceableCollection>(in collection: inout C) where C.Element == AnyCancellable {
        AnyCancellable(self).store(in: &collection)
    }

    /// Stores this cancellable, wrapped in an ``AnyCancellable``, in the given set.
    public func store(in set: inout Set<AnyCancellable>) {
        AnyCancellable(self).store(in: &set)
    }
}
