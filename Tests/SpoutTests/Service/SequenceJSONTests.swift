import Foundation
import TestSupport
import Testing

@testable import Spout

/// `GET /sequences/{name}` as one JSON document: the bytes, headers, limits, errors, log line and metrics.
@Suite(.offPool) struct SequenceJSONTests {
    @Test(arguments: [
        ("/sequences/fibonacci?count=10", ["Accept: application/json"]),
        ("/sequences/fibonacci?count=10", ["Accept: APPLICATION/JSON"]),
        ("/sequences/fibonacci?count=10", ["Accept: text/html, application/json"]),
        ("/sequences/fibonacci?count=10", ["Accept: application/json;q=0.9, text/event-stream;q=0.1"]),
        ("/sequences/fibonacci?count=10&format=json", []),
        ("/sequences/fibonacci?start=0&count=%31%30", ["Accept: application/json"]),
        ("//sequences///fibonacci?&count=10&", ["Accept: application/json"]),
    ])
    func theDocumentIsTheSameWhicheverWayJSONIsAskedFor(path: String, headers: [String]) async throws {
        let server = try SpoutTestServer()
        let response = try server.get(path, headers: headers)
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.header("Access-Control-Allow-Origin") == "*")
        #expect(response.header("Content-Length") == "99")
        #expect(
            response.text
                == #"{"sequence":"fibonacci","start":0,"count":10,"values":["0","1","1","2","3","5","8","13","21","34"]}"#
        )
        await server.stop()
    }

    @Test func startCountAndBigValuesAreHonoured() async throws {
        let server = try SpoutTestServer()
        let empty = try server.get("/sequences/primes?count=0&start=7", headers: ["Accept: application/json"])
        #expect(empty.text == #"{"sequence":"primes","start":7,"count":0,"values":[]}"#)
        let big = try server.get("/sequences/factorial?count=2&start=25", headers: ["Accept: application/json"])
        #expect(
            big.text
                == #"{"sequence":"factorial","start":25,"count":2,"values":["15511210043330985984000000","403291461126605635584000000"]}"#
        )
        // F(99999) is about a second of CPU in a debug build, more on loaded cores in the full suite: the
        // deadline guards a hang, not the speed (as for the costly-start stream tests).
        let last = try server.get("/sequences/fibonacci?count=2&start=99999&format=json", timeout: .seconds(60))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(last.body)) as? [String: Any])
        let values = try #require(object["values"] as? [String])
        #expect(object["start"] as? Int == 99_999 && object["count"] as? Int == 2)
        // F(99999) and F(100000) both have 20,899 digits.
        #expect(values.map(\.count) == [20_899, 20_899])
        #expect(values[1].hasPrefix("2597406934722172416") && values[1].hasSuffix("3428746875"))
        await server.stop()
    }

    @Test(
        arguments: [
            ("/sequences/fibonacci?count=6", 200, nil),
            ("/sequences/fibonacci?count=7", 400, "count must be between 0 and 6, got 7"),
            ("/sequences/fibonacci?count=3&start=51", 400, "start must be between 0 and 50, got 51"),
            ("/sequences/fibonacci", 400, "count is required for JSON (at most 6); streams may omit it"),
            ("/sequences/fibonacci?count=3&interval=5", 400, "interval paces streams; it does not apply to JSON"),
            (
                "/sequences/fibonacci?count=3&Count=3", 400,
                "unknown parameter \"Count\"; known parameters: count, format, interval, start"
            ),
        ] as [(String, Int, String?)]
    )
    func configuredLimitsApplyToJSON(path: String, status: Int, detail: String?) async throws {
        let server = try SpoutTestServer { configuration in
            configuration.sequences.maxCount = 6
            configuration.sequences.maxStart = 50
        }
        let response = try server.get(path, headers: ["Accept: application/json"])
        #expect(response.status == status)
        if let detail {
            let problem = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
            #expect(problem["detail"] as? String == detail)
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        await server.stop()
    }

    @Test func anAcceptWithNothingServedIsNotAcceptable() async throws {
        let server = try SpoutTestServer()
        let response = try server.get("/sequences/fibonacci?count=3", headers: ["Accept: text/html, image/*"])
        #expect(response.status == 406)
        #expect(response.header("Content-Type") == "application/problem+json")
        await server.stop()
    }

    @Test func listedOriginsGetTheirOriginEchoedOnJSON() async throws {
        let server = try SpoutTestServer { $0.cors.allowedOrigins = ["https://a.example"] }
        let allowed = try server.get(
            "/sequences/naturals?count=2",
            headers: ["Accept: application/json", "Origin: https://a.example"]
        )
        #expect(allowed.header("Access-Control-Allow-Origin") == "https://a.example")
        #expect(allowed.header("Vary") == "Accept, Accept-Encoding, Origin")
        let other = try server.get(
            "/sequences/naturals?count=2",
            headers: ["Accept: application/json", "Origin: https://b.example"]
        )
        #expect(other.header("Access-Control-Allow-Origin") == nil)
        // Refused or not, the answer depended on Origin.
        #expect(other.header("Vary") == "Accept, Accept-Encoding, Origin")
        #expect(other.text == #"{"sequence":"naturals","start":0,"count":2,"values":["0","1"]}"#)
        await server.stop()
    }

    @Test func eachAnswerIsLoggedAndCountedUnderItsRoute() async throws {
        let server = try SpoutTestServer()
        _ = try server.get("/sequences/fibonacci?count=10", headers: ["Accept: application/json"])
        _ = try server.get("/sequences/fibonacci?count=x", headers: ["Accept: application/json"])
        // The line and the counts are recorded just after the response is handed over: wait for both lines.
        #expect(eventually { server.log.lines.filter { $0.contains("/sequences/fibonacci") }.count >= 2 })
        let metrics = try server.get("/metrics").text
        #expect(metrics.contains("spout_http_requests_total{route=\"/sequences/{name}\",status=\"200\"} 1\n"))
        #expect(metrics.contains("spout_http_requests_total{route=\"/sequences/{name}\",status=\"400\"} 1\n"))
        #expect(metrics.contains("spout_http_request_duration_seconds_count{route=\"/sequences/{name}\"} 2\n"))
        let lines = server.log.lines.filter { $0.contains("/sequences/fibonacci") }
        #expect(lines.count == 2)
        #expect(
            lines.contains {
                $0.contains(
                    #""method":"GET","path":"/sequences/fibonacci","query":"count=10","route":"/sequences/{name}","status":200,"#
                )
                    && $0.contains(#","bytes":99,"request_id":""#)
            }
        )
        #expect(
            lines.contains {
                $0.contains(
                    #""path":"/sequences/fibonacci","query":"count=x","route":"/sequences/{name}","status":400,"#
                )
            }
        )
        await server.stop()
    }
}
