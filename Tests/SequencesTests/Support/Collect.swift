import Reactive
import Sequences
import TestSupport

/// Subscribes with unlimited demand and returns the values' decimal forms (the publishers are synchronous).
func decimalValues(of publisher: some Publisher<Term, Never>) -> [String] {
    let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .unlimited)
    publisher.subscribe(subscriber)
    return subscriber.values.map(\.value.description)
}

/// Subscribes with unlimited demand and returns the terms (the publishers are synchronous).
func terms(of publisher: some Publisher<Term, Never>) -> [Term] {
    let subscriber = TrackingSubscriber<Term, Never>(initialDemand: .unlimited)
    publisher.subscribe(subscriber)
    return subscriber.values
}

/// The term at `index` with a machine-word value.
func term(_ index: Int, _ value: UInt64) -> Term {
    Term(index: index, value: BigUInt(value))
}

/// Whether `n` is prime, by trial division: slow and obviously right.
func isPrimeByTrialDivision(_ n: UInt64) -> Bool {
    if n < 2 { return false }
    if n < 4 { return true }
    if n % 2 == 0 { return false }
    var divisor: UInt64 = 3
    while divisor * divisor <= n {
        if n % divisor == 0 { return false }
        divisor += 2
    }
    return true
}
