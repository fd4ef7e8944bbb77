import Foundation
import Reactive
import TestSupport
import Testing

@Suite struct RecordTests {
    private struct Oops: Error, Equatable, Codable {}

    @Test func playsBackRecordingRespectingDemand() {
        let record = Record<Int, Oops> { recording in
            recording.receive(1)
            recording.receive(2)
            recording.receive(completion: .failure(Oops()))
        }
        let subscriber = TrackingSubscriber<Int, Oops>(initialDemand: .max(1))
        record.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(1)])
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(1), .value(2), .completion(.failure(Oops()))])
    }

    @Test func emptyRecordingCompletesAtOnce() {
        let subscriber = TrackingSubscriber<Int, Oops>(initialDemand: nil)
        Record<Int, Oops>(output: [], completion: .failure(Oops())).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.failure(Oops()))])
    }

    @Test func recordingWithoutCompletionFinishes() {
        let subscriber = TrackingSubscriber<Int, Never>()
        Record<Int, Never> { $0.receive(5) }.subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .value(5), .completion(.finished)])
    }

    @Test func codableRoundTrip() throws {
        let record = Record<Int, Oops>(output: [1, 2], completion: .failure(Oops()))
        let decoded = try JSONDecoder().decode(Record<Int, Oops>.self, from: JSONEncoder().encode(record))
        #expect(decoded.recording.output == [1, 2])
        #expect(decoded.recording.completion == .failure(Oops()))
    }
}

@Suite struct ResultAndOptionalPublisherTests {
    private struct Oops: Error, Equatable {}

    @Test func resultSuccessSendsValueOnDemand() {
        let subscriber = TrackingSubscriber<Int, Oops>(initialDemand: nil)
        Result<Int, Oops>.success(3).publisher.subscribe(subscriber)
        #expect(subscriber.history == [.subscription])
        subscriber.request(.max(1))
        #expect(subscriber.history == [.subscription, .value(3), .completion(.finished)])
    }

    @Test func resultFailureFailsAtOnce() {
        let subscriber = TrackingSubscriber<Int, Oops>(initialDemand: nil)
        Result<Int, Oops>.Publisher(Oops()).subscribe(subscriber)
        #expect(subscriber.history == [.subscription, .completion(.failure(Oops()))])
    }

    @Test func optionalSendsItsValueOrJustFinishes() {
        let some = TrackingSubscriber<Int, Never>(initialDemand: .max(1))
        Optional(4).publisher.subscribe(some)
        let none = TrackingSubscriber<Int, Never>(initialDemand: nil)
        Optional<Int>.none.publisher.subscribe(none)
        #expect(some.history == [.subscription, .value(4), .completion(.finished)])
        #expect(none.history == [.subscription, .completion(.finished)])
    }
}
