import HTTPServer
import Testing

@testable import Spout

@Suite struct QueryParametersTests {
    private let known: [String] = ["count", "start", "interval", "format"]

    @Test func readsIntegersInRange() throws {
        let query = try QueryParameters([("count", "10"), ("start", "0")], known: known)
        #expect(try query.integer("count", in: 0...Int.max) == 10)
        #expect(try query.integer("start", in: 0...100) == 0)
        #expect(try query.integer("interval", in: 1...1000) == nil)
    }

    @Test(arguments: [
        ("count", "-1", 0...Int.max, "count must be a non-negative integer, got \"-1\""),
        ("count", "abc", 0...Int.max, "count must be a non-negative integer, got \"abc\""),
        ("count", "", 0...Int.max, "count must be a non-negative integer, got \"\""),
        ("count", "1e3", 0...Int.max, "count must be a non-negative integer, got \"1e3\""),
        (
            "count", "99999999999999999999999", 0...Int.max,
            "count must be between 0 and 9223372036854775807, got 99999999999999999999999"
        ),
        ("start", "100001", 0...100_000, "start must be between 0 and 100000, got 100001"),
        ("interval", "0.5s", 1...60_000, "interval must be a positive integer, got \"0.5s\""),
        ("interval", "0", 1...60_000, "interval must be between 1 and 60000, got 0"),
        ("count", "+5", 0...Int.max, "count must be a non-negative integer, got \"+5\""),
        ("count", " 5", 0...Int.max, "count must be a non-negative integer, got \" 5\""),
    ])
    func badValuesNameTheParameterAndTheValue(name: String, value: String, range: ClosedRange<Int>, detail: String)
        throws
    {
        let query = try QueryParameters([(name, value)], known: known)
        #expect(throws: Problem.invalidParameter(name, detail)) {
            try query.integer(name, in: range)
        }
    }

    @Test func unknownAndRepeatedParametersAreRejected() {
        #expect(
            throws: Problem.invalidParameter(
                "cout",
                "unknown parameter \"cout\"; known parameters: count, format, interval, start"
            )
        ) {
            try QueryParameters([("cout", "5")], known: known)
        }
        #expect(throws: Problem.invalidParameter("count", "count must be given at most once")) {
            try QueryParameters([("count", "5"), ("count", "6")], known: known)
        }
    }

    @Test func hugeValuesAreClippedInMessages() throws {
        let query = try QueryParameters([("count", String(repeating: "x", count: 10_000))], known: known)
        #expect {
            try query.integer("count", in: 0...Int.max)
        } throws: { error in
            guard let problem = error as? Problem else { return false }
            return problem.detail.count < 200
        }
    }
}

@Suite struct QueryParametersFromRequestTests {
    private let known: [String] = ["count", "start", "interval", "format"]

    /// Reading a query from its bytes gives what the decoded query items give: the same values or the same problem.
    @Test(arguments: [
        "", "count=10", "count=10&start=5", "&&count=10&", "count", "count=", "=5", "count==5", "count=1=2",
        "count=1&count=2", "cout=5", "count=5&cout=5", "format=json&count=3", "count=%31%30", "count=1+0",
        "c%6Funt=3", "count=3&%63ount=4", "count=%zz", "count=%", "start=3&interval=7&format=ndjson&count=9",
        "x=\u{e9}", "count=10&foo=bar&baz", String(repeating: "x", count: 100) + "=1",
    ])
    func bytesAgreeWithDecodedItems(query: String) throws {
        let request = Request(head: RequestHead(method: .get, target: "/sequences/fibonacci?" + query))
        let fromItems = Result { () throws(Problem) in try QueryParameters(request.queryItems, known: known) }
        let fromBytes = Result { () throws(Problem) in try QueryParameters(query: request, known: known) }
        switch (fromItems, fromBytes) {
        case (.success(let expected), .success(let read)):
            for name in known {
                #expect(expected[name] == read[name], "\(name) in \(query)")
            }
        case (.failure(let expected), .failure(let read)):
            #expect(expected == read)
        default:
            Issue.record("\(query): items gave \(fromItems), bytes gave \(fromBytes)")
        }
    }

    @Test func aRequestWithoutQueryHasNoParameters() throws {
        let query = try QueryParameters(query: Request(head: RequestHead(method: .get, target: "/x")), known: known)
        #expect(query["count"] == nil)
    }
}
