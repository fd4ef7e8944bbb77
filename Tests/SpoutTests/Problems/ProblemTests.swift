import Foundation
import Testing

@testable import Spout

@Suite struct ProblemTests {
    @Test func rendersRFC9457MembersInOrder() throws {
        var problem = Problem.invalidParameter("count", "count must be a non-negative integer, got \"abc\"")
        problem.instance = "/sequences/fibonacci"
        let text = String(decoding: problem.jsonBytes, as: UTF8.self)
        #expect(
            text
                == #"{"type":"/problems/invalid-parameter","title":"Invalid parameter","status":400,"detail":"count must be a non-negative integer, got \"abc\"","instance":"/sequences/fibonacci","parameter":"count"}"#
        )
        let object = try #require(try JSONSerialization.jsonObject(with: Data(problem.jsonBytes)) as? [String: Any])
        #expect(object["status"] as? Int == 400)
        #expect(object["parameter"] as? String == "count")
    }

    @Test func integerExtensionsAreJSONNumbersAndStringsStayStrings() throws {
        let target = UpstreamTarget(url: "http://127.0.0.1:1/x", resource: "/x")
        let problem = UpstreamError.gaveUp(
            attempts: 3,
            lastStatus: 503,
            error: .status(target, code: 503, retryAfter: nil)
        ).problem
        let text = String(decoding: problem.jsonBytes, as: UTF8.self)
        #expect(text.hasSuffix(#","upstream":"/x","upstreamStatus":503,"attempts":3}"#))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(problem.jsonBytes)) as? [String: Any])
        #expect(object["upstreamStatus"] as? Int == 503)
        #expect(object["attempts"] as? Int == 3)
        #expect(object["upstream"] as? String == "/x")
        #expect(Problem.ExtensionValue.integer(7).description == "7")
    }

    @Test func controlCharactersAreEscaped() throws {
        let problem = Problem.notFound("no route for \"/a\u{0}b\n\u{7F}\"")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(problem.jsonBytes)) as? [String: Any])
        #expect(object["detail"] as? String == "no route for \"/a\u{0}b\n\u{7F}\"")
    }
}

@Suite struct JSONTextTests {
    @Test(arguments: [(0, "0"), (-1, "-1"), (Int.max, "9223372036854775807"), (Int.min, "-9223372036854775808")])
    func integers(value: Int, text: String) {
        var bytes: [UInt8] = []
        JSONText.appendInteger(value, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == text)
    }

    @Test(arguments: [
        (1.5, 3, "1.500"), (0.0004, 3, "0.000"), (-2.25, 1, "-2.3"), (12.0, 0, "12"), (Double.nan, 3, "null"),
    ])
    func decimals(value: Double, digits: Int, text: String) {
        var bytes: [UInt8] = []
        JSONText.appendDecimal(value, fractionDigits: digits, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == text)
    }
}
