/// A type of object with a publisher that emits before the object has changed.
///
/// A class whose stored properties are marked ``Published`` gets `objectWillChange` for free: an
/// ``ObservableObjectPublisher`` that sends just before any of those properties changes. (Combine
/// finds them by reflection; so does this library, through `Mirror`.) A class that declares its
/// own `objectWillChange` sends through it itself.
///
///     final class Counter: ObservableObject { @Published var count = 0 }
///     let counter = Counter(); let c = counter.objectWillChange.sink { print("will change") }
///     counter.count += 1
///     // Prints: will change
///
/// **Thread safety:** the default `objectWillChange` is safe to read from any thread.
public protocol ObservableObject: AnyObject {
    /// The type of publisher that emits before the object has changed.
    associatedtype ObjectWillChangePublisher: Publisher = ObservableObjectPublisher
    where ObjectWillChangePublisher.Failure == Never

    /// A publisher that emits before the object has changed.
    var objectWillChange: ObjectWillChangePublisher { get }
}

extension ObservableObject where ObjectWillChangePublisher == ObservableObjectPublisher {
    /// A publisher that emits before any of the object's `@Published` properties changes.
    ///
    /// The same publisher is returned each time, as long as the object has at least one
    /// `@Published` property; an object without any gets a new, silent publisher each time, as in
    /// Combine.
    public var objectWillChange: ObservableObjectPublisher {
        let storages = publishedStorages(of: self)
        guard let first = storages.first else { return ObservableObjectPublisher() }
        // The first property's storage decides, so that racing first reads agree on one publisher.
        let publisher = first.installObjectWillChange(ObservableObjectPublisher())
        for storage in storages.dropFirst() {
            _ = storage.installObjectWillChange(publisher)
        }
        return publisher
    }
}

/// The storages of every `@Published` property of `object`, its superclasses' included, in
/// declaration order.
private func publishedStorages(of object: AnyObject) -> [PublishedStorageBase] {
    var storages: [PublishedStorageBase] = []
    var mirror: Mirror? = Mirror(reflecting: object)
    while let current = mirror {
        for child in current.children {
            if let property = child.value as? any PublishedProperty {
                storages.append(property.storageForObservableObject)
            }
        }
        mirror = current.superclassMirror
    }
    return storages
}
