import Dispatch
import Reactive
import Synchronization
import TestSupport
import Testing

private typealias HandPublisher = CombiningTestKit.HandPublisher
private typealias TestError = CombiningTestKit.TestError

@Suite(.offPool) struct MulticastTests {
    @Test func connectDeliversToEverySubscriberThatAttachedBefore() {
        let multicast = [1, 2, 3].publisher.multicast { PassthroughSubject<Int, Never>() }
        let first = TrackingSubscriber<Int, Never>()
        let second = TrackingSubscriber<Int, Never>()
        multicast.subscribe(first)
        multicast.subscribe(second)
        #expect(first.history == [.subscription])
        let connection = multicast.connect()
        let expected: [TrackingSubscriber<Int, Never>.Event] = [
            .subscription, .value(1), .value(2), .value(3), .completion(.finished),
        ]
        #expect(first.history == expected)
        #expect(second.history == expected)
        connection.cancel()
    }

    @Test func makesItsSubjectOnce() {
        let made = Atomic<Int>(0)
        let multicast = PassthroughSubject<Int, Never>().multicast { () -> PassthroughSubject<Int, Never> in
            made.add(1, ordering: .relaxed)
            return PassthroughSubject()
        }
        let cancellables = [multicast.sink { _ in }, multicast.sink { _ in }]
        let connection = multicast.connect()
        #expect(made.load(ordering: .relaxed) == 1)
        connection.cancel()
        _ = cancellables
    }

    @Test func multicastWithAGivenSubjectUsesIt() {
        let subject = PassthroughSubject<Int, Never>()
        let upstream = PassthroughSubject<Int, Never>()
        let multicast = upstream.multicast(subject: subject)
        let viaSubject = TrackingSubscriber<Int, Never>()
        subject.subscribe(viaSubject)
        let connection = multicast.connect()
        upstream.send(7)
        #expect(viaSubject.values == [7])
        connection.cancel()
    }

    @Test func cancellingTheConnectionCancelsTheUpstreamAndConnectAgainResubscribes() {
        let upstream = HandPublisher<Int, Never>()
        let multicast = upstream.multicast { PassthroughSubject<Int, Never>() }
        let subscriber = TrackingSubscriber<Int, Never>()
        multicast.subscribe(subscriber)
        let connection = multicast.connect()
        let again = multicast.connect()
        #expect(upstream.subscriptions.count == 1)
        upstream.send(1)
        connection.cancel()
        again.cancel()
        #expect(upstream.subscriptions.map(\.history) == [[.requested(.unlimited), .cancelled]])
        let reconnection = multicast.connect()
        #expect(upstream.subscriptions.count == 2)
        upstream.send(2)
        #expect(subscriber.values == [1, 2])
        reconnection.cancel()
    }

    @Test func failureReachesEverySubscriber() {
        let upstream = PassthroughSubject<Int, TestError>()
        let multicast = upstream.multicast { PassthroughSubject<Int, TestError>() }
        let first = TrackingSubscriber<Int, TestError>()
        let second = TrackingSubscriber<Int, TestError>()
        multicast.subscribe(first)
        multicast.subscribe(second)
        let connection = multicast.connect()
        upstream.send(completion: .failure(TestError(code: 5)))
        #expect(first.history == [.subscription, .completion(.failure(TestError(code: 5)))])
        #expect(second.history == first.history)
        connection.cancel()
    }

    @Test func concurrentConnectsSubscribeTheUpstreamOnce() {
        let upstream = HandPublisher<Int, Never>()
        let multicast = upstream.multicast { PassthroughSubject<Int, Never>() }
        let subscriber = TrackingSubscriber<Int, Never>()
        multicast.subscribe(subscriber)
        let connections = ConnectionList()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            connections.append(multicast.connect())
        }
        #expect(upstream.subscriptions.count == 1)
        for connection in connections.all { connection.cancel() }
        #expect(upstream.subscription?.isCancelled == true)
    }

    @Test func releasesTheChainAfterTheConnectionIsCancelled() {
        weak var weakMulticast: Publishers.Multicast<PassthroughSubject<Int, Never>, PassthroughSubject<Int, Never>>?
        weak var weakSubject: PassthroughSubject<Int, Never>?
        let upstream = PassthroughSubject<Int, Never>()
        do {
            let subject = PassthroughSubject<Int, Never>()
            let multicast = upstream.multicast(subject: subject)
            weakMulticast = multicast
            weakSubject = subject
            let subscriber = TrackingSubscriber<Int, Never>()
            multicast.subscribe(subscriber)
            let connection = multicast.connect()
            upstream.send(1)
            connection.cancel()
            subscriber.cancel()
        }
        #expect(weakMulticast == nil)
        #expect(weakSubject == nil)
    }
}

/// Connections collected from several threads.
private final class ConnectionList: @unchecked Sendable {
    // @unchecked Sendable: `connections` is guarded by `lock`.
    private let lock = Lock()
    private var connections: [any Cancellable] = []  // Guarded by lock.

    func append(_ connection: any Cancellable) { lock.withLock { connections.append(connection) } }
    var all: [any Cancellable] { lock.withLock { connections } }
}
