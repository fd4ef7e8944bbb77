import Reactive
import TestSupport
import Testing

@testable import Sequences

@Suite struct FibonacciValuesTests {
    @Test func firstValues() {
        #expect(
            decimalValues(of: Fibonacci(count: 15))
                == ["0", "1", "1", "2", "3", "5", "8", "13", "21", "34", "55", "89", "144", "233", "377"]
        )
    }

    @Test func startOffsetsTheIndices() {
        #expect(terms(of: Fibonacci(start: 10, count: 3)) == [term(10, 55), term(11, 89), term(12, 144)])
    }

    @Test func ninetyThirdNoLongerFitsInInt64() {
        let value = terms(of: Fibonacci(start: 93, count: 1))[0].value
        #expect(value.description == "12200160415121876738")
        #expect(value > BigUInt(UInt64(Int64.max)))
    }

    @Test func hundredth() {
        #expect(decimalValues(of: Fibonacci(start: 100, count: 1)) == ["354224848179261915075"])
    }

    @Test func thousandthMatchesSchoolbookAddition() {
        let expected = DecimalString.fibonacci(1_000)
        #expect(expected.count == 209)
        #expect(decimalValues(of: Fibonacci(start: 1_000, count: 1)) == [expected])
    }

    @Test func streamingAndSkippingAgree() {
        let streamed = decimalValues(of: Fibonacci(count: 510))
        #expect(decimalValues(of: Fibonacci(start: 500, count: 10)) == Array(streamed[500...]))
        #expect(streamed[509] == DecimalString.fibonacci(509))
    }
}

@Suite struct NaturalsValuesTests {
    @Test func valueIsIndex() {
        #expect(terms(of: Naturals(count: 5)) == (0..<5).map { term($0, UInt64($0)) })
        #expect(terms(of: Naturals(start: 1_000, count: 2)) == [term(1_000, 1_000), term(1_001, 1_001)])
    }

    @Test func valuesPastOneLimbPrintExactly() {
        let start = 999_999_999_999_999_999
        #expect(decimalValues(of: Naturals(start: start, count: 2)) == ["999999999999999999", "1000000000000000000"])
        #expect(decimalValues(of: Naturals(start: .max, count: 1)) == [String(Int.max)])
    }
}

@Suite struct PrimesValuesTests {
    @Test func firstValues() {
        #expect(
            decimalValues(of: Primes(count: 12)) == [
                "2", "3", "5", "7", "11", "13", "17", "19", "23", "29", "31", "37",
            ]
        )
    }

    @Test func firstTenThousandMatchTrialDivision() {
        var expected: [String] = []
        var candidate: UInt64 = 2
        while expected.count < 10_000 {
            if isPrimeByTrialDivision(candidate) { expected.append(String(candidate)) }
            candidate += 1
        }
        #expect(decimalValues(of: Primes(count: 10_000)) == expected)
    }

    @Test func primesAroundAMillion() {
        // There are 78,498 primes below 10^6; the largest is 999,983.
        #expect(terms(of: Primes(start: 78_497, count: 2)) == [term(78_497, 999_983), term(78_498, 1_000_003)])
    }

    @Test func millionthPrime() {
        #expect(
            terms(of: Primes(start: 999_999, count: 2)) == [term(999_999, 15_485_863), term(1_000_000, 15_485_867)]
        )
    }

    @Test(arguments: [1, 2, 3, 6_540, 6_541, 6_542, 6_543, 12_000])
    func skippingAgreesWithStreaming(start: Int) {
        // 6,542 primes lie below 65,536, where the first segment ends.
        let streamed = terms(of: Primes(count: 12_010))
        #expect(terms(of: Primes(start: start, count: 10)) == Array(streamed[start..<(start + 10)]))
    }
}

@Suite struct FactorialValuesTests {
    @Test func firstValues() {
        #expect(
            decimalValues(of: Factorial(count: 10))
                == ["1", "1", "2", "6", "24", "120", "720", "5040", "40320", "362880"]
        )
    }

    @Test func twentyAndTwentyFive() {
        #expect(decimalValues(of: Factorial(start: 20, count: 1)) == ["2432902008176640000"])
        #expect(decimalValues(of: Factorial(start: 25, count: 1)) == ["15511210043330985984000000"])
    }

    @Test func hundredHas158DigitsAndMatchesSchoolbookMultiplication() {
        let value = terms(of: Factorial(start: 100, count: 1))[0].value
        #expect(value.decimalDigitCount == 158)
        #expect(value.description == DecimalString.factorial(100))
    }

    @Test func streamingAndSkippingAgree() {
        let streamed = decimalValues(of: Factorial(count: 205))
        #expect(decimalValues(of: Factorial(start: 200, count: 5)) == Array(streamed[200...]))
    }
}

@Suite struct SequencePublisherTests {
    @Test(arguments: SequenceKind.allCases)
    func matchesTheDedicatedPublisher(kind: SequenceKind) {
        let dedicated: [Term] =
            switch kind {
            case .fibonacci: terms(of: Fibonacci(start: 7, count: 20))
            case .naturals: terms(of: Naturals(start: 7, count: 20))
            case .primes: terms(of: Primes(start: 7, count: 20))
            case .factorial: terms(of: Factorial(start: 7, count: 20))
            }
        #expect(terms(of: SequencePublisher(kind: kind, start: 7, count: 20)) == dedicated)
        #expect(dedicated.map(\.index) == Array(7..<27))
    }

    @Test func namedPublishersWrapTheirKind() {
        let probe = SequenceProbe()
        let fibonacci = Fibonacci(start: 4, count: 2, probe: probe)
        #expect(fibonacci.publisher.kind == .fibonacci)
        #expect(fibonacci.start == 4 && fibonacci.count == 2 && fibonacci.probe === probe)
        #expect([Naturals.kind, Primes.kind, Factorial.kind] == [.naturals, .primes, .factorial])
        let wrapped = Primes(wrapping: SequencePublisher(kind: .primes, start: 3, count: 2))
        #expect(terms(of: wrapped) == terms(of: Primes(start: 3, count: 2)))
    }

    @Test func wrappingAnotherKindIsAnAPIViolation() async {
        await #expect(processExitsWith: .failure) {
            _ = Fibonacci(wrapping: SequencePublisher(kind: .primes))
        }
    }

    @Test func kindsHaveNamesAndSummaries() {
        #expect(SequenceKind.allCases.map(\.rawValue) == ["fibonacci", "naturals", "primes", "factorial"])
        #expect(SequenceKind(rawValue: "primes") == .primes)
        #expect(SequenceKind.allCases.allSatisfy { !$0.summary.isEmpty && $0.maxStart > 0 })
    }

    @Test(arguments: SequenceKind.allCases)
    func subscriptionDescribesItsKind(kind: SequenceKind) {
        let subscriber = TrackingSubscriber<Term, Never>(initialDemand: nil)
        SequencePublisher(kind: kind, count: 1).subscribe(subscriber)
        #expect(subscriber.subscription.map { "\($0)" } == kind.displayName)
    }
}

@Suite struct ReachingStartTests {
    @Test func aPreparedPublisherDeliversTheSameElementsAtOnce() throws {
        for kind in [SequenceKind.fibonacci, .primes, .factorial] {
            let publisher = SequencePublisher(kind: kind, start: 2_000, count: 3)
            #expect(publisher.startIsCostly)
            let probe = SequenceProbe()
            let prepared = try #require(
                SequencePublisher(kind: kind, start: 2_000, count: 3, probe: probe).reachingStart { false }
            )
            #expect(probe.isStartReached)
            #expect(!prepared.startIsCostly)
            #expect(terms(of: prepared) == terms(of: publisher))
            // Each subscription starts from its own copy of the prepared position.
            #expect(terms(of: prepared) == terms(of: publisher))
        }
        #expect(!SequencePublisher(kind: .naturals, start: 1_000_000).startIsCostly)
        #expect(!SequencePublisher(kind: .fibonacci, start: 1_024).startIsCostly)
    }

    @Test func aCancelledPreparationStopsBetweenChunksAndReportsTheCancel() {
        let probe = SequenceProbe()
        let asked = TestBox(0)
        let prepared = SequencePublisher(kind: .fibonacci, start: 100_000, count: 1, probe: probe).reachingStart {
            asked.update { count in
                count += 1
                return count > 2  // cancelled after two chunks
            }
        }
        #expect(prepared == nil)
        #expect(asked.value == 3)
        #expect(probe.isCancelled)
        #expect(!probe.isStartReached)
        #expect(probe.produced == 0)
    }
}
