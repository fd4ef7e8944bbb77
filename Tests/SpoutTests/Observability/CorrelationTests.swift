import Foundation
import TestSupport
import Testing

@testable import Spout

@Suite struct TraceParentTests {
    private static let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test func aValidHeaderIsReadAndContinued() throws {
        let parent = try #require(TraceParent(Self.valid))
        #expect(parent.version == 0)
        #expect(parent.traceID == (0x4bf9_2f35_77b3_4da6, 0xa3ce_929d_0e0e_4736))
        #expect(parent.parentID == 0x00f0_67aa_0ba9_02b7)
        #expect(parent.flags == 1)
        let correlation = RequestCorrelation(requestID: nil, traceparent: Self.valid, tracestate: "congo=t61rcWkgMzE")
        #expect(correlation.traceIDText == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(correlation.parentSpanID == 0x00f0_67aa_0ba9_02b7)
        #expect(!correlation.startedTrace)
        let outgoing = correlation.outgoingTraceparent
        #expect(outgoing.hasPrefix("00-4bf92f3577b34da6a3ce929d0e0e4736-"))
        #expect(outgoing.hasSuffix("-01"))
        #expect(!outgoing.contains("00f067aa0ba902b7"), "upstream calls get Spout's span as their parent")
        let forwarded = try #require(TraceParent(outgoing))
        #expect(forwarded.parentID == correlation.spanID)
        #expect(
            correlation.correlationHeaders == [
                "X-Request-ID": correlation.requestID,
                "traceparent": outgoing,
                "tracestate": "congo=t61rcWkgMzE",
            ]
        )
    }

    @Test(arguments: [
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",  // short
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",  // version 00 with more
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // uppercase
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // zero parent id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // version ff
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // separator
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",  // not hex
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  // later version, bad continuation
        " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\u{00e9}",
    ])
    func invalidHeadersStartANewTrace(header: String) {
        #expect(TraceParent(header) == nil)
        let correlation = RequestCorrelation(requestID: nil, traceparent: header, tracestate: "a=b")
        #expect(correlation.startedTrace)
        #expect(correlation.traceFlags == 0)
        #expect(correlation.traceState == nil, "tracestate is only kept with a valid traceparent")
        #expect(correlation.traceIDText != "00000000000000000000000000000000")
        #expect(correlation.traceIDText != "4bf92f3577b34da6a3ce929d0e0e4736")
    }

    @Test func aLaterVersionIsReadAsVersionZero() throws {
        let parent = try #require(
            TraceParent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds")
        )
        #expect(parent.version == 0xCC)
        #expect(parent.flags == 1)
        let correlation = RequestCorrelation(
            requestID: nil,
            traceparent: "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future",
            tracestate: nil
        )
        #expect(correlation.outgoingTraceparent.hasPrefix("00-4bf92f3577b34da6a3ce929d0e0e4736-"))
    }

    @Test(arguments: [
        ("congo=t61rcWkgMzE", true),
        ("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", true),
        ("rojo=1, ,congo=2", true),  // empty members are allowed
        ("tenant@system=1", true),
        ("a*b/c_d-e=x y", true),
        ("Upper=1", false),
        ("1abc=1", false),
        ("a=", false),
        ("a=b\u{7F}", false),
        ("a=b=c", false),
        ("a", false),
        ("a=1,a=2", false),  // duplicate key
        ("@system=1", false),
        (",", false),
    ])
    func traceStateIsKeptOnlyWhenWellFormed(text: String, kept: Bool) {
        #expect((RequestCorrelation.validTraceState(text) != nil) == kept)
    }

    @Test func traceStateIsBounded() {
        let members = (0..<33).map { "k\($0)=v" }.joined(separator: ",")
        #expect(RequestCorrelation.validTraceState(members) == nil)
        let long = "a=" + String(repeating: "x", count: 511)
        #expect(RequestCorrelation.validTraceState(long) == nil)
        #expect(RequestCorrelation.validTraceState((0..<32).map { "k\($0)=v" }.joined(separator: ",")) != nil)
    }
}

@Suite struct RequestIDTests {
    @Test(arguments: [
        ("abc-123", true),
        ("f81d4fae-7dec-11d0-a765-00a0c91e6bf6", true),
        ("a.b_c:d+e=f/g@h~i", true),
        (String(repeating: "x", count: 128), true),
        (String(repeating: "x", count: 129), false),
        ("", false),
        ("has space", false),
        ("quote\"d", false),
        ("new\nline", false),
        ("<script>", false),
        ("é", false),
    ])
    func clientIDsAreKeptOnlyWhenSafe(id: String, kept: Bool) {
        #expect(RequestCorrelation.isValidRequestID(id) == kept)
        let correlation = RequestCorrelation(requestID: id, traceparent: nil, tracestate: nil)
        #expect((correlation.requestID == id) == kept)
        #expect(RequestCorrelation.isValidRequestID(correlation.requestID))
    }

    @Test func generatedIDsAreShortSafeAndDistinct() {
        var seen: Set<String> = []
        var traces: Set<String> = []
        for _ in 0..<20_000 {
            let correlation = RequestCorrelation(requestID: nil, traceparent: nil, tracestate: nil)
            #expect(correlation.requestID.utf8.count == 15)
            seen.insert(correlation.requestID)
            traces.insert(correlation.traceIDText)
            #expect(correlation.spanID != 0)
        }
        #expect(seen.count == 20_000)
        #expect(traces.count == 20_000)
        #expect(
            seen.allSatisfy {
                $0.utf8.allSatisfy { byte in (0x30...0x39).contains(byte) || (0x61...0x76).contains(byte) }
            }
        )
    }

    @Test func generatedIDsAreDistinctAcrossThreads() {
        let seen = TestBox<Set<String>>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            var local: [String] = []
            for _ in 0..<5_000 {
                local.append(RequestCorrelation(requestID: nil, traceparent: nil, tracestate: nil).requestID)
            }
            let batch = local
            seen.update { $0.formUnion(batch) }
        }
        #expect(seen.value.count == 20_000)
    }
}

@Suite struct QueryRedactionTests {
    private func logged(_ query: String, _ names: [String] = ["token", "password"]) -> String {
        var bytes: [UInt8] = []
        QueryRedaction(names).appendQuery(query, maxBytes: 64, to: &bytes)
        return (try? JSONSerialization.jsonObject(with: Data(bytes), options: .fragmentsAllowed) as? String)
            ?? "not JSON"
    }

    @Test func redactedValuesAreReplacedAndTheRestKept() {
        #expect(logged("userId=1&token=abc") == "userId=1&token=REDACTED")
        #expect(logged("TOKEN=abc&Password=x&token=again") == "TOKEN=REDACTED&Password=REDACTED&token=REDACTED")
        #expect(logged("%74oken=abc&to%6Ben=d") == "%74oken=REDACTED&to%6Ben=REDACTED")
        #expect(logged("token&tokens=1&x=token") == "token&tokens=1&x=token")
        #expect(logged("a=%22quoted%22&b=\"") == "a=%22quoted%22&b=\"")
        #expect(logged("token=abc", []) == "token=abc")
        #expect(logged("&&token=&") == "&&token=REDACTED&")
    }

    @Test func longQueriesAreCut() {
        let text = logged(String(repeating: "a=1&", count: 100))
        #expect(text.utf8.count == 64 + "…".utf8.count)
        #expect(text.hasSuffix("…"))
    }
}

@Suite struct EventLogTests {
    @Test func linesCarryTimeLevelEventMessageAndFields() throws {
        let sink = MemoryLogSink()
        let log = EventLog(sink: sink, level: .info)
        log.log(.debug, "hidden", "not written")
        log.log(
            .warn,
            "configuration_unknown_variable",
            "unknown \"x\"",
            ["variable": "SPOUT_X", "count": 2, "ok": .boolean(true)]
        )
        #expect(sink.lines.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(sink.lines[0].utf8)) as? [String: Any])
        #expect(object["level"] as? String == "warn")
        #expect(object["event"] as? String == "configuration_unknown_variable")
        #expect(object["message"] as? String == "unknown \"x\"")
        #expect(object["variable"] as? String == "SPOUT_X")
        #expect(object["count"] as? Int == 2)
        #expect(object["ok"] as? Bool == true)
        #expect(object["time"] is String)
        #expect(LogLevel.debug < .info && LogLevel.info < .warn && LogLevel.warn < .error)
    }
}

@Suite struct HexTests {
    @Test(
        arguments: [0, 1, 9, 10, 15, 16, 0xABCD_EF01_2345_6789, 0xFFFF_FFFF_FFFF_FFFF, 0x8000_0000_0000_0000]
            as [UInt64]
    )
    func digitsAreLowercaseAndZeroPadded(value: UInt64) {
        for count in [2, 8, 16] {
            var bytes: [UInt8] = [UInt8(ascii: "x")]
            Hex.append(value, digits: count, to: &bytes)
            let full = String(repeating: "0", count: 16 - String(value, radix: 16).count) + String(value, radix: 16)
            #expect(String(decoding: bytes, as: UTF8.self) == "x" + full.suffix(count))
        }
    }
}
