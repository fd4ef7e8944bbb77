/// A type that publishes a property marked with an attribute.
///
/// Marking a class's property `@Published` makes `$property` a publisher that sends the current
/// value to each new subscriber, then each new value just before it is stored (in the property's
/// `willSet`, as in Combine: reading the property inside the subscriber still gives the old
/// value). If the class is an ``ObservableObject`` with the default `objectWillChange`, that
/// publisher sends first. Like Combine's, it works only on properties of classes.
///
///     final class ViewModel: ObservableObject { @Published var name = "" }
///     let vm = ViewModel(); let c = vm.$name.sink { print("name:", $0) }; vm.name = "Swift"
///     // Prints: name:  / name: Swift (one per line)
///
/// **Ownership:** the enclosing object owns the storage; `$property` publishers and their
/// subscriptions share it. Subscriptions made by ``Publisher/assign(to:)`` are cancelled when
/// the storage goes away with the object.
///
/// **Thread safety:** reading and writing are safe from any thread; writes from several threads
/// at once are published in no particular order.
@propertyWrapper
public struct Published<Value> {
    /// The storage shared by every copy of this property wrapper.
    internal var storage: PublishedStorage<Value>

    /// Creates the published instance with an initial wrapped value.
    public init(wrappedValue: Value) {
        storage = PublishedStorage(wrappedValue)
    }

    /// Creates the published instance with an initial value.
    public init(initialValue: Value) {
        self.init(wrappedValue: initialValue)
    }

    /// Unavailable: `@Published` is only available on properties of classes, which use the
    /// enclosing-instance subscript instead.
    @available(*, unavailable, message: "@Published is only available on properties of classes")
    public var wrappedValue: Value {
        get { internalInconsistency("@Published wrappedValue read outside a class") }
        set { internalInconsistency("@Published wrappedValue written outside a class") }
    }

    /// The property for which this instance exposes a publisher: `$property`.
    public var projectedValue: Publisher {
        mutating get { Publisher(storage: storage) }
        set { storage = newValue.storage }
    }

    /// Reads and writes the value through the enclosing object, so that a write can tell the
    /// object's `objectWillChange` first.
    public static subscript<EnclosingSelf: AnyObject>(
        _enclosingInstance object: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Published<Value>>
    ) -> Value {
        get { object[keyPath: storageKeyPath].storage.value }
        set { object[keyPath: storageKeyPath].storage.set(newValue) }
    }

    /// A publisher for properties marked with the `@Published` attribute.
    ///
    /// It sends the current value on a subscriber's first demand, then every new value.
    ///
    ///     final class Box { @Published var value = 1 }
    ///     let box = Box(); let c = box.$value.sink { print($0) }
    ///     // Prints: 1
    ///
    /// **Ownership:** shares the property's storage.
    ///
    /// **Thread safety:** safe to subscribe to from any thread.
    public struct Publisher: Reactive.Publisher {
        public typealias Output = Value
        public typealias Failure = Never

        internal let storage: PublishedStorage<Value>

        internal init(storage: PublishedStorage<Value>) {
            self.storage = storage
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Value, S.Failure == Never {
            storage.subject.receive(subscriber: subscriber)
        }
    }
}

/// The non-generic face of a ``Published`` property, found by reflection.
internal protocol PublishedProperty {
    var storageForObservableObject: PublishedStorageBase { get }
}

extension Published: PublishedProperty {
    internal var storageForObservableObject: PublishedStorageBase { storage }
}

/// The part of a `@Published` property's storage that its object's `objectWillChange` needs.
///
/// **Ownership:** owned by the property; retains the object's publisher once installed.
///
/// **Thread safety:** safe to call from any thread.
internal class PublishedStorageBase: @unchecked Sendable {
    // @unchecked Sendable: `objectWillChange` is only touched inside `lock`.
    internal let lock = Lock()
    /// Installed on the first read of the object's default `objectWillChange`.
    internal var objectWillChange: ObservableObjectPublisher?  // Guarded by lock.

    /// Installs `publisher` unless one is there already.
    ///
    /// - Returns: The publisher now installed.
    internal func installObjectWillChange(_ publisher: ObservableObjectPublisher) -> ObservableObjectPublisher {
        lock.withLock {
            if let installed = objectWillChange { return installed }
            objectWillChange = publisher
            return publisher
        }
    }
}

/// The storage of one `@Published` property: its value, the subject behind `$property` (made on
/// first use), and the subscriptions of ``Publisher/assign(to:)`` that write into it.
///
/// **Ownership:** owned by the property (and shared by its `$property` publishers). Cancels the
/// `assign(to:)` subscriptions when deinitialized.
///
/// **Thread safety:** safe to call from any thread.
internal final class PublishedStorage<Value>: PublishedStorageBase, @unchecked Sendable {
    // @unchecked Sendable: `storedValue`, `storedSubject` and `assignments` are only touched inside `lock`.
    private var storedValue: Value  // Guarded by lock.
    private var storedSubject: CurrentValueSubject<Value, Never>?  // Guarded by lock.
    private var assignments: [any Subscription] = []  // Guarded by lock.

    internal init(_ value: Value) {
        storedValue = value
    }

    deinit {
        for subscription in assignments {
            subscription.cancel()
        }
    }

    internal var value: Value {
        lock.withLock { storedValue }
    }

    /// The subject that `$property` subscribers attach to, created with the current value.
    internal var subject: CurrentValueSubject<Value, Never> {
        lock.withLock {
            if let storedSubject { return storedSubject }
            let subject = CurrentValueSubject<Value, Never>(storedValue)
            storedSubject = subject
            return subject
        }
    }

    /// Tells the object, then the `$property` subscribers, then stores the value (willSet order).
    internal func set(_ newValue: Value) {
        let (willChange, subject) = lock.withLock { (objectWillChange, storedSubject) }
        willChange?.send()
        subject?.send(newValue)
        // The old value is dropped after the lock: releasing it may run a deinit.
        let oldValue = lock.withLock { () -> Value in
            defer { storedValue = newValue }
            return storedValue
        }
        withExtendedLifetime(oldValue) {}
    }

    /// Keeps an `assign(to:)` subscription alive for as long as this storage.
    internal func retainAssignment(_ subscription: any Subscription) {
        lock.withLock { assignments.append(subscription) }
    }
}
