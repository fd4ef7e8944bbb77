import Dispatch
import Foundation
import Testing

@testable import Spout

@Suite struct MetricsTests {
    @Test func rendersCountersGaugesAndHistogramsInTextFormat() {
        let metrics = SpoutMetrics()
        metrics.requests.increment(["/health", "200"])
        metrics.requests.increment(["/health", "200"])
        metrics.requests.increment(["/sequences/{name}", "400"])
        metrics.activeStreams.add(3)
        metrics.activeStreams.add(-1)
        metrics.requestDuration.observe(0.003, ["/health"])
        metrics.requestDuration.observe(20, ["/health"])
        metrics.streamsEnded.increment(["client_gone"])
        let text = metrics.registry.render()
        #expect(text.contains("# TYPE spout_http_requests_total counter\n"))
        #expect(text.contains("spout_http_requests_total{route=\"/health\",status=\"200\"} 2\n"))
        #expect(text.contains("spout_http_requests_total{route=\"/sequences/{name}\",status=\"400\"} 1\n"))
        #expect(text.contains("spout_active_streams 2\n"))
        #expect(text.contains("spout_http_request_duration_seconds_bucket{route=\"/health\",le=\"0.0025\"} 0\n"))
        #expect(text.contains("spout_http_request_duration_seconds_bucket{route=\"/health\",le=\"0.005\"} 1\n"))
        #expect(text.contains("spout_http_request_duration_seconds_bucket{route=\"/health\",le=\"30\"} 2\n"))
        #expect(text.contains("spout_http_request_duration_seconds_bucket{route=\"/health\",le=\"+Inf\"} 2\n"))
        #expect(text.contains("spout_http_request_duration_seconds_count{route=\"/health\"} 2\n"))
        #expect(text.contains("spout_streams_ended_total{reason=\"client_gone\"} 1\n"))
        #expect(text.contains("spout_events_sent_total 0\n"))
    }

    @Test func labelValuesAreEscaped() {
        #expect(renderLabels(names: ["path"], values: ["a\"b\\c\nd"]) == #"{path="a\"b\\c\nd"}"#)
    }

    @Test func countersAreExactUnderConcurrentIncrements() {
        let metrics = SpoutMetrics()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 { metrics.requests.increment(["/x", "200"]) }
        }
        #expect(metrics.requests.value(["/x", "200"]) == 80_000)
    }
}

@Suite struct RequestLogTests {
    @Test func entryIsOneJSONObjectWithTheRequestFields() throws {
        let entry = RequestLogEntry(
            time: Date(timeIntervalSince1970: 1_764_700_200.123),
            method: "GET",
            path: "/sequences/fibonacci",
            status: 200,
            durationSeconds: 0.0123456,
            bytes: 2048,
            events: 10,
            end: .clientGone
        )
        let text = String(decoding: entry.jsonBytes, as: UTF8.self)
        #expect(
            text
                == #"{"time":"2025-12-02T18:30:00.123Z","level":"info","method":"GET","path":"/sequences/fibonacci","status":200,"duration_ms":12.346,"bytes":2048,"events":10,"end":"client_gone"}"#
        )
        _ = try JSONSerialization.jsonObject(with: Data(entry.jsonBytes))
    }

    @Test(arguments: [
        (0.0, "1970-01-01T00:00:00.000Z"),
        (951_782_400.5, "2000-02-29T00:00:00.500Z"),
        (-1.0, "1969-12-31T23:59:59.000Z"),
        (4_102_444_799.999, "2099-12-31T23:59:59.999Z"),
        (253_402_300_800, "10000-01-01T00:00:00.000Z"),
        (-62_167_219_200, "0000-01-01T00:00:00.000Z"),
        // A year before 0 keeps the zeros-then-sign padding of `String(-1)` to four places.
        (-62_198_755_200, "00-1-01-01T00:00:00.000Z"),
    ])
    func timestampsAreUTCISO8601(seconds: Double, text: String) {
        #expect(RequestLogEntry.iso8601(Date(timeIntervalSince1970: seconds)) == text)
    }

    @Test func bufferedSinkWritesEveryLineToItsDescriptor() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let sink = BufferedLogSink(descriptor: fds[1])
        for index in 0..<1000 { sink.write(line: Array("line \(index)".utf8)) }
        sink.flush()
        close(fds[1])
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(fds[0], &chunk, chunk.count)
            if count <= 0 { break }
            received.append(contentsOf: chunk[0..<count])
        }
        close(fds[0])
        let lines = String(decoding: received, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 1000)
        #expect(lines.first == "line 0")
        #expect(lines.last == "line 999")
    }
}

@Suite struct MetricCellsTests {
    @Test func cellsResolvedInAdvanceStayOutOfTheExpositionUntilCounted() {
        let metrics = SpoutMetrics()
        let route = RouteMetrics(route: "/r", metrics: metrics)
        var text = metrics.registry.render()
        #expect(!text.contains(#"route="/r""#))
        #expect(metrics.requests.value(["/r", "200"]) == 0)
        #expect(metrics.requestDuration.count(["/r"]) == 0)

        route.record(status: 200, seconds: 0.002)
        route.record(status: 418, seconds: 20)  // not among the cells resolved in advance
        route.countRequest(status: 204)
        text = metrics.registry.render()
        #expect(text.contains("spout_http_requests_total{route=\"/r\",status=\"200\"} 1\n"))
        #expect(text.contains("spout_http_requests_total{route=\"/r\",status=\"204\"} 1\n"))
        #expect(text.contains("spout_http_requests_total{route=\"/r\",status=\"418\"} 1\n"))
        #expect(!text.contains("spout_http_requests_total{route=\"/r\",status=\"404\"}"))
        #expect(text.contains("spout_http_request_duration_seconds_bucket{route=\"/r\",le=\"0.001\"} 0\n"))
        #expect(text.contains("spout_http_request_duration_seconds_bucket{route=\"/r\",le=\"0.0025\"} 1\n"))
        #expect(text.contains("spout_http_request_duration_seconds_bucket{route=\"/r\",le=\"+Inf\"} 2\n"))
        #expect(text.contains("spout_http_request_duration_seconds_count{route=\"/r\"} 2\n"))
        #expect(metrics.requestDuration.count(["/r"]) == 2)
    }

    @Test func aCellAndTheLabelArrayCountTheSameSeries() {
        let metrics = SpoutMetrics()
        let cell = metrics.requests.cell(["/x", "200"])
        cell.increment()
        metrics.requests.increment(["/x", "200"], by: 2)
        #expect(metrics.requests.value(["/x", "200"]) == 3)
        #expect(metrics.registry.render().contains("spout_http_requests_total{route=\"/x\",status=\"200\"} 3\n"))
    }

    @Test func countsSaturateInsteadOfOverflowing() {
        let metrics = SpoutMetrics()
        metrics.requests.increment(["/x", "200"], by: .max - 1)
        metrics.requests.increment(["/x", "200"], by: 5)
        #expect(metrics.requests.value(["/x", "200"]) == .max)
    }

    @Test func cellsAreExactUnderConcurrentIncrements() {
        let metrics = SpoutMetrics()
        let route = RouteMetrics(route: "/c", metrics: metrics)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 { route.record(status: 200, seconds: 0.001) }
        }
        #expect(metrics.requests.value(["/c", "200"]) == 80_000)
        #expect(metrics.requestDuration.count(["/c"]) == 80_000)
    }
}

@Suite struct RequestLogBytesTests {
    /// The entry as `JSONObjectWriter` writes it, field by field: what `jsonBytes` must equal byte for byte.
    private func reference(_ entry: RequestLogEntry) -> [UInt8] {
        var object = JSONObjectWriter()
        object.addRaw("time", json: Array("\"\(RequestLogEntry.iso8601(entry.time))\"".utf8))
        object.add("level", "info")
        object.add("method", entry.method)
        object.add("path", entry.path)
        if let query = entry.query { object.add("query", query) }
        if let route = entry.route { object.add("route", route) }
        object.add("status", entry.status)
        object.add("duration_ms", entry.durationSeconds * 1000, fractionDigits: 3)
        object.add("bytes", entry.bytes)
        if let events = entry.events { object.add("events", events) }
        if let end = entry.end { object.add("end", end.rawValue) }
        if let correlation = entry.correlation {
            object.add("request_id", correlation.requestID)
            object.add("trace_id", correlation.traceIDText)
        }
        if let remote = entry.remoteAddress { object.add("remote", remote) }
        if let agent = entry.userAgent { object.add("user_agent", agent) }
        return object.finish()
    }

    @Test(
        arguments: [
            ("/health", 0.000041, nil, nil),
            ("/p\"a\\t\u{1}h/é", 1.5, 0, StreamEnd.completed),
            ("/sequences/naturals?count=3", -0.0, 3, .shutdown),
            ("", .infinity, Int.max, .error),
        ] as [(String, Double, Int?, StreamEnd?)]
    )
    func entryBytesAreTheFieldsInOrder(path: String, seconds: Double, events: Int?, end: StreamEnd?) {
        for time in [0.0, 1_764_700_200.123, 253_402_300_800, -62_198_755_200] {
            let entry = RequestLogEntry(
                time: Date(timeIntervalSince1970: time),
                method: "OPTIONS",
                path: path,
                status: 503,
                durationSeconds: seconds,
                bytes: 17,
                events: events,
                end: end
            )
            #expect(entry.jsonBytes == reference(entry), "\(String(decoding: entry.jsonBytes, as: UTF8.self))")
            var full = entry
            full.query = "a=1&b=%22x%22"
            full.route = "/sequences/{name}"
            full.correlation = RequestCorrelation(requestID: "abc-1", traceparent: nil, tracestate: nil)
            full.remoteAddress = "::1"
            full.userAgent = "curl/8 \"quoted\""
            #expect(full.jsonBytes == reference(full), "\(String(decoding: entry.jsonBytes, as: UTF8.self))")
        }
    }

    /// Every byte JSON escapes, in each string field the run copies, on an otherwise ordinary line: the run
    /// notices it while copying and the line goes the general way, the same bytes as field by field.
    @Test func aByteToEscapeInAnyFieldGoesTheGeneralWay() {
        for special in ["\"", "\\", "\u{0}", "\u{1F}", "\u{7F}"] {
            for field in 0..<5 {
                var entry = RequestLogEntry(
                    time: Date(timeIntervalSince1970: 1_764_700_200.5),
                    method: field == 0 ? "G\(special)T" : "GET",
                    path: field == 1 ? "/p\(special)" : "/p",
                    status: 200,
                    durationSeconds: 0.001,
                    bytes: 15
                )
                entry.query = field == 2 ? "a=\(special)" : "a=1"
                entry.route = field == 3 ? "/r\(special)" : "/r"
                entry.remoteAddress = field == 4 ? "::1\(special)" : "::1"
                var fieldByField: [UInt8] = []
                entry.appendJSONFieldByField(to: &fieldByField)
                let line = String(decoding: entry.jsonBytes, as: UTF8.self)
                #expect(entry.jsonBytes == fieldByField, "\(line)")
                #expect(entry.jsonBytes == reference(entry), "\(line)")
                #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(line)")
            }
        }
    }

    /// `appendJSON` writes the common line in runs of stack memory and falls back to the field-by-field way for
    /// values it does not take (escapes, years outside 0...9999, durations that are not plain numbers): both
    /// ways must write the same bytes, at the edges of the runs' bounds too.
    @Test(
        arguments: [
            ("GET", "/health", 0.0000414, nil),
            ("GET", "/r", 8.9e12, "::1"),  // the longest duration a run writes (19 digits)
            ("GE\"T", "/sequences/{name}", -0.0123456, "::1"),
            (String(repeating: "M", count: 32), "/a\u{7F}", 9.2e12, "127.0.0.1"),
            (String(repeating: "M", count: 33), "/", 1e20, "fe80::1%eth0"),
            ("DELETE", "/é", -.infinity, "1.2.3.4\u{0}"),
        ] as [(String, String, Double, String?)]
    )
    func runsWriteWhatTheFieldByFieldWayWrites(method: String, route: String, seconds: Double, remote: String?) {
        // Paths and queries the run takes, and those it leaves to the general way (escapes, a redacted value,
        // lengths past its bounds).
        let paths = [
            "/p", "/p?\"", "/é/\\", String(repeating: "/x", count: 1024), "/" + String(repeating: "x", count: 2048),
        ]
        let queries: [String?] = [
            nil, "count=3", "a=\"", "token=secret&count=3",
            String(repeating: "q", count: RequestLogEntry.maxQueryBytes),
            String(repeating: "q", count: RequestLogEntry.maxQueryBytes + 1),
        ]
        for time in [0.0, 1_764_700_200.999, 253_402_300_799.999, 253_402_300_800, -62_198_755_200] {
            for (index, numbers) in ([(200, 15, nil), (Int.min, Int.max, Int.min), (-1, 0, 0)] as [(Int, Int, Int?)])
                .enumerated()
            {
                var entry = RequestLogEntry(
                    time: Date(timeIntervalSince1970: time),
                    method: method,
                    path: paths[(index + Int(time.magnitude) % 5) % paths.count],
                    status: numbers.0,
                    durationSeconds: seconds,
                    bytes: numbers.1,
                    events: numbers.2,
                    end: numbers.2 == nil ? nil : .clientGone
                )
                entry.route = route
                entry.remoteAddress = remote
                entry.correlation = RequestCorrelation(
                    requestID: String(repeating: "r", count: RequestCorrelation.maxRequestIDLength),
                    traceparent: nil,
                    tracestate: nil
                )
                entry.userAgent = numbers.2 == nil ? nil : "agent"
                entry.redaction = QueryRedaction(["token"])
                for query in queries {
                    entry.query = query
                    var fieldByField: [UInt8] = []
                    entry.appendJSONFieldByField(to: &fieldByField)
                    #expect(entry.jsonBytes == fieldByField, "\(String(decoding: entry.jsonBytes, as: UTF8.self))")
                    // The reference neither redacts nor clips.
                    if let query, query.hasPrefix("token") || query.utf8.count > RequestLogEntry.maxQueryBytes {
                        continue
                    }
                    #expect(entry.jsonBytes == reference(entry), "\(String(decoding: entry.jsonBytes, as: UTF8.self))")
                }
            }
        }
    }
}
