import Reactive
import TestSupport
import Testing

private final class ViewModel: ObservableObject {
    @Published var name = ""
    @Published var count = 0
}

private class BaseModel: ObservableObject {
    @Published var base = 0
}

private final class DerivedModel: BaseModel {
    @Published var derived = "a"
}

private final class NoPublished: ObservableObject {
    var plain = 0
}

private final class CustomPublisherModel: ObservableObject {
    let objectWillChange = PassthroughSubject<Void, Never>()
    @Published var value = 0
}

/// Records lines the way the tutorial prints them.
private final class Log: @unchecked Sendable {
    // @unchecked Sendable: `lines` is only touched inside `lock`.
    private let lock = Lock()
    private var stored: [String] = []  // Guarded by lock.

    func append(_ line: String) { lock.withLock { stored.append(line) } }

    var lines: [String] { lock.withLock { stored } }
}

@Suite struct PublishedTests {
    @Test func tutorialViewModelPrintsInCombineOrder() {
        let vm = ViewModel()
        var bag = Set<AnyCancellable>()
        let log = Log()
        vm.objectWillChange.sink { log.append("will change") }.store(in: &bag)
        vm.$name.sink { log.append("name: \($0)") }.store(in: &bag)
        vm.name = "Swift"
        #expect(log.lines == ["name: ", "will change", "name: Swift"])
        #expect(vm.name == "Swift")
    }

    @Test func subscriberSeesOldValueInsideWillSet() {
        let vm = ViewModel()
        let log = Log()
        let cancellable = vm.$count.dropFirstValue().sink { new in log.append("new \(new) old \(vm.count)") }
        vm.count = 5
        #expect(log.lines == ["new 5 old 0"])
        cancellable.cancel()
    }

    @Test func objectWillChangeIsSharedAcrossPropertiesAndReads() {
        let vm = ViewModel()
        #expect(vm.objectWillChange === vm.objectWillChange)
        let log = Log()
        let cancellable = vm.objectWillChange.sink { log.append("change") }
        vm.name = "a"
        vm.count = 1
        vm.count += 1
        #expect(log.lines == ["change", "change", "change"])
        cancellable.cancel()
    }

    @Test func subclassPropertiesShareTheSamePublisher() {
        let model = DerivedModel()
        let log = Log()
        let cancellable = model.objectWillChange.sink { log.append("change") }
        model.base = 1
        model.derived = "b"
        #expect(log.lines == ["change", "change"])
        cancellable.cancel()
    }

    @Test func objectWithoutPublishedPropertiesGetsAFreshPublisher() {
        let object = NoPublished()
        #expect(object.objectWillChange !== object.objectWillChange)
    }

    @Test func customObjectWillChangeIsNotSentAutomatically() {
        let model = CustomPublisherModel()
        let log = Log()
        let cancellable = model.objectWillChange.sink { log.append("change") }
        model.value = 1
        #expect(log.lines == [])
        cancellable.cancel()
    }

    @Test func projectedPublisherRespectsDemandAndReplaysCurrentValue() {
        let vm = ViewModel()
        vm.count = 3
        let subscriber = TrackingSubscriber<Int, Never>(initialDemand: .max(2))
        vm.$count.subscribe(subscriber)
        vm.count = 4
        vm.count = 5
        #expect(subscriber.history == [.subscription, .value(3), .value(4)])
    }

    @Test func modelIsFreedWhileSubscribersCancel() {
        weak var weakModel: ViewModel?
        do {
            let vm = ViewModel()
            weakModel = vm
            let first = vm.objectWillChange.sink {}
            let second = vm.$name.sink { _ in }
            vm.name = "x"
            first.cancel()
            second.cancel()
        }
        #expect(weakModel == nil)
    }
}

extension Publisher {
    /// Skips the replayed value, without depending on the operators' `dropFirst`.
    fileprivate func dropFirstValue() -> AnyPublisher<Output, Failure> {
        let first = Log()
        return AnyPublisher(DropOne(upstream: self, seen: first))
    }
}

private struct DropOne<Upstream: Publisher>: Publisher {
    typealias Output = Upstream.Output
    typealias Failure = Upstream.Failure
    let upstream: Upstream
    let seen: Log

    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Failure {
        let seen = seen
        upstream.subscribe(
            AnySubscriber(
                receiveSubscription: { subscriber.receive(subscription: $0) },
                receiveValue: { value in
                    if seen.lines.isEmpty {
                        seen.append("seen")
                        return .max(1)
                    }
                    return subscriber.receive(value)
                },
                receiveCompletion: { subscriber.receive(completion: $0) }
            )
        )
    }
}
