import Foundation
import Reactive
import TestSupport
import Testing

private struct Point: Codable, Equatable {
    var x: Int
    var y: Int
}

@Suite struct DecodeTests {
    @Test func decodesEachElement() {
        let subscriber = TrackingSubscriber<Point, any Error>()
        [Data(#"{"x":1,"y":2}"#.utf8)].publisher.decode(type: Point.self, decoder: JSONDecoder()).subscribe(subscriber)
        #expect(subscriber.values == [Point(x: 1, y: 2)])
        #expect(subscriber.history.last?.description == "finished")
    }

    @Test func decodingErrorFailsAndCancelsUpstream() {
        let upstream = DrivenPublisher<Data, Never>()
        let subscriber = TrackingSubscriber<Point, any Error>()
        upstream.decode(type: Point.self, decoder: JSONDecoder()).subscribe(subscriber)
        upstream.send(Data("nope".utf8))
        #expect(subscriber.values == [])
        #expect(
            subscriber.completion.map { if case .failure(let error) = $0 { error is DecodingError } else { false } }
                == true
        )
        #expect(upstream.subscription.history == [.requested(.unlimited), .cancelled])
    }

    @Test func encodeThenDecodeRoundTrips() {
        let subscriber = TrackingSubscriber<Point, any Error>(initialDemand: .max(1))
        [Point(x: 3, y: 4), Point(x: 5, y: 6)].publisher.encode(encoder: JSONEncoder())
            .decode(type: Point.self, decoder: JSONDecoder())
            .subscribe(subscriber)
        #expect(subscriber.values == [Point(x: 3, y: 4)])
        subscriber.request(.max(1))
        #expect(subscriber.values == [Point(x: 3, y: 4), Point(x: 5, y: 6)])
    }

    @Test func releasesEverythingAfterEveryEnding() {
        for ending in StreamEnding.allCases {
            #expect(releases(ending) { $0.encode(encoder: JSONEncoder()) } == (true, true))
            #expect(
                releases(ending) { $0.map { Data("\($0)".utf8) }.decode(type: Int.self, decoder: JSONDecoder()) } == (
                    true, true
                )
            )
        }
    }
}
