import Foundation
import Reactive
import Testing

@Suite struct DemandTests {
    @Test func additionSaturatesAtUnlimited() {
        #expect(Subscribers.Demand.max(1) + .max(2) == .max(3))
        #expect(Subscribers.Demand.unlimited + .max(2) == .unlimited)
        #expect(Subscribers.Demand.max(Int.max) + .max(1) == .unlimited)
        #expect(Subscribers.Demand.max(Int.max) + 1 == .unlimited)
        #expect(Subscribers.Demand.max(3) + -1 == .max(2))
    }

    @Test func subtractionNeverGoesBelowNone() {
        #expect(Subscribers.Demand.max(3) - .max(1) == .max(2))
        #expect(Subscribers.Demand.max(1) - .max(3) == .none)
        #expect(Subscribers.Demand.max(3) - .unlimited == .none)
        #expect(Subscribers.Demand.unlimited - .max(3) == .unlimited)
        #expect(Subscribers.Demand.unlimited - .unlimited == .unlimited)
        #expect(Subscribers.Demand.max(3) - 5 == .none)
    }

    @Test func multiplicationSaturates() {
        #expect(Subscribers.Demand.max(3) * 4 == .max(12))
        #expect(Subscribers.Demand.max(Int.max) * 2 == .unlimited)
        #expect(Subscribers.Demand.unlimited * 0 == .unlimited)
    }

    @Test func comparisonsWithIntegersAndUnlimited() {
        #expect(Subscribers.Demand.unlimited > .max(Int.max))
        #expect(Subscribers.Demand.max(2) < .max(3))
        #expect(Subscribers.Demand.none == 0)
        #expect(Subscribers.Demand.max(2) > 1)
        #expect(Subscribers.Demand.max(2) >= 2)
        #expect(Subscribers.Demand.unlimited > Int.max)
        #expect(!(Subscribers.Demand.unlimited == Int.max))
        #expect(Subscribers.Demand.none > -1)
        #expect(Subscribers.Demand.max(5).max == 5)
        #expect(Subscribers.Demand.unlimited.max == nil)
        #expect(Subscribers.Demand.unlimited.description == "unlimited")
        #expect(Subscribers.Demand.max(7).description == "max(7)")
    }

    @Test func codableRoundTrip() throws {
        let demands: [Subscribers.Demand] = [.none, .max(42), .unlimited]
        let data = try JSONEncoder().encode(demands)
        #expect(try JSONDecoder().decode([Subscribers.Demand].self, from: data) == demands)
    }
}
