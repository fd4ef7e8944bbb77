import Dispatch
import Reactive
import Synchronization
import TestSupport
import Testing

/// A publisher that runs `onRequest` on the thread that asks for values, with the subscriber, and
/// completes when it returns: a stand-in for a synchronous publisher that also hands work to another thread.
private struct ScriptedPublisher: Publisher {
    typealias Output = Int
    typealias Failure = Never

    let onRequest: (AnySubscriber<Int, Never>, any Cancellable) -> Void

    func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
        let any = AnySubscriber(subscriber)
        let cancellable = subscriber as? any Cancellable ?? TrackingSubscription()
        let onRequest = onRequest
        let script = Handed {
            onRequest(any, cancellable)
            any.receive(completion: .finished)
        }
        let scripted = TrackingSubscription(onRequest: { _ in script.run() })
        subscriber.receive(subscription: scripted)
    }
}

/// A closure handed to a `@Sendable` one.
// @unchecked Sendable: audited, each use runs it on one thread at a time (the thread that hands it
// over waits for the other to end).
private struct Handed: @unchecked Sendable {
    let run: () -> Void
}

/// Runs `body` on a thread of Dispatch's and waits for it to end: the calling thread does nothing
/// meanwhile, so what `body` touches is never used by two threads at once.
private func onAnotherThread(_ body: @escaping () -> Void) -> Bool {
    let handed = Handed(run: body)
    let done = TestSignal()
    DispatchQueue.global().async {
        handed.run()
        done.signal()
    }
    return done.wait()
}

private final class Captured: Sendable {}

/// The sink's delivery right (issue 27): values that a publisher delivers inside `subscribe`, or inside
/// the sink's own request, while another thread also delivers or cancels.
@Suite(.offPool) struct SinkTests {
    /// Records the values and whether two deliveries ever overlapped.
    final class Recorder: Sendable {
        let values = TestBox<[Int]>([])
        let inside = Atomic<Bool>(false)
        let overlapped = Atomic<Bool>(false)

        func receive(_ value: Int) {
            if inside.exchange(true, ordering: .acquiringAndReleasing) { overlapped.store(true, ordering: .relaxed) }
            values.update { $0.append(value) }
            inside.store(false, ordering: .releasing)
        }
    }

    @Test func aValueFromAnotherThreadDuringSubscribeIsDeliveredInOrder() {
        let recorder = Recorder()
        let handedOver = TestBox(false)
        let publisher = ScriptedPublisher { subscriber, _ in
            _ = subscriber.receive(1)
            let delivered = onAnotherThread { _ = subscriber.receive(2) }
            handedOver.update { $0 = delivered }
            _ = subscriber.receive(3)
        }
        // Through `sink`, whose thread holds a delivery right for the whole `subscribe`.
        let cancellable = publisher.sink { recorder.receive($0) }
        #expect(handedOver.value)
        #expect(recorder.values.value == [1, 2, 3])
        let overlapped = recorder.overlapped.load(ordering: .relaxed)
        #expect(!overlapped)
        _ = cancellable

        // A sink subscribed directly: its thread holds a right for the sink's own request.
        let direct = Recorder()
        let sink = Subscribers.Sink<Int, Never>(receiveCompletion: { _ in }, receiveValue: { direct.receive($0) })
        publisher.subscribe(sink)
        #expect(direct.values.value == [1, 2, 3])
        let directOverlapped = direct.overlapped.load(ordering: .relaxed)
        #expect(!directOverlapped)
    }

    @Test func aCancelFromAnotherThreadDuringSubscribeStopsValuesAndReleasesTheClosureAfter() {
        weak var weakCaptured: Captured?
        let received = TestBox<[Int]>([])
        let cancelled = TestBox(false)
        let publisher = ScriptedPublisher { subscriber, sink in
            _ = subscriber.receive(1)
            let done = onAnotherThread { sink.cancel() }
            cancelled.update { $0 = done }
            _ = subscriber.receive(2)
        }
        var cancellable: AnyCancellable?
        do {
            let captured = Captured()
            weakCaptured = captured
            cancellable = publisher.sink { value in
                withExtendedLifetime(captured) { received.update { $0.append(value) } }
            }
        }
        #expect(cancelled.value)
        #expect(received.value == [1])
        #expect(weakCaptured == nil)
        _ = cancellable

        let direct = TestBox<[Int]>([])
        weak var weakDirect: Captured?
        do {
            let captured = Captured()
            weakDirect = captured
            let sink = Subscribers.Sink<Int, Never>(
                receiveCompletion: { _ in },
                receiveValue: { value in withExtendedLifetime(captured) { direct.update { $0.append(value) } } }
            )
            publisher.subscribe(sink)
        }
        #expect(direct.value == [1])
        #expect(weakDirect == nil)
    }

    @Test func aCancelOnTheDeliveringThreadDuringSubscribeStopsValues() {
        let received = TestBox<[Int]>([])
        let completions = TestBox(0)
        weak var weakCaptured: Captured?
        let publisher = ScriptedPublisher { subscriber, sink in
            _ = subscriber.receive(1)
            sink.cancel()
            _ = subscriber.receive(2)
        }
        var cancellable: AnyCancellable?
        do {
            let captured = Captured()
            weakCaptured = captured
            cancellable = publisher.sink(
                receiveCompletion: { _ in completions.update { $0 += 1 } },
                receiveValue: { value in withExtendedLifetime(captured) { received.update { $0.append(value) } } }
            )
        }
        #expect(received.value == [1])
        #expect(completions.value == 0)
        #expect(weakCaptured == nil)
        _ = cancellable

        // A sink subscribed directly that cancels itself from its value closure, inside its own request.
        let stopped = TestBox<[Int]>([])
        let counting = ScriptedPublisher { subscriber, _ in
            for value in 1...3 { _ = subscriber.receive(value) }
        }
        var selfCancelling: Subscribers.Sink<Int, Never>?
        selfCancelling = Subscribers.Sink(
            receiveCompletion: { _ in completions.update { $0 += 1 } },
            receiveValue: { value in
                stopped.update { $0.append(value) }
                if value == 2 { selfCancelling?.cancel() }
            }
        )
        counting.subscribe(selfCancelling!)
        #expect(stopped.value == [1, 2])
        #expect(completions.value == 0)
        selfCancelling = nil
    }
}
