// Benchmark server for bench/http_rps.sh: the bare HTTPServer module, no router, no publishers.
//
//   GET /health                                   -> {"status":"ok"} (application/json)
//   GET /sequences/fibonacci?count=N (N <= 93)    -> {"values":["0","1",...]} with Accept: application/json
//
// Port from the environment variable PORT (default 8080); binds 127.0.0.1.
import Dispatch
import Glibc
import HTTPServer

let healthBody = Array(#"{"status":"ok"}"#.utf8)
let jsonHeaders: Headers = ["Content-Type": "application/json"]
let textHeaders: Headers = ["Content-Type": "text/plain; charset=utf-8"]

/// Appends `value` in decimal to `bytes`.
func appendDecimal(_ value: UInt64, to bytes: inout [UInt8]) {
    var digits: [UInt8] = []
    var remaining = value
    repeat {
        digits.append(UInt8(remaining % 10) + 0x30)
        remaining /= 10
    } while remaining != 0
    bytes.append(contentsOf: digits.reversed())
}

/// `{"values":["0","1",…]}` for the first `count` Fibonacci numbers (count ≤ 93 fits UInt64).
func fibonacciJSON(count: Int) -> [UInt8] {
    var body = Array(#"{"values":["#.utf8)
    var (a, b): (UInt64, UInt64) = (0, 1)
    for index in 0..<count {
        if index > 0 { body.append(UInt8(ascii: ",")) }
        body.append(UInt8(ascii: "\""))
        appendDecimal(a, to: &body)
        body.append(UInt8(ascii: "\""))
        if index < count - 1 { (a, b) = (b, a &+ b) }
    }
    body += Array("]}".utf8)
    return body
}

func count(in query: String?) -> Int? {
    guard let query else { return 10 }
    for pair in query.split(separator: "&") where pair.hasPrefix("count=") {
        return Int(pair.dropFirst(6))
    }
    return 10
}

var configuration = Server.Configuration(host: "127.0.0.1", port: 8080)
if let port = getenvString("PORT").flatMap({ Int($0) }) { configuration.port = port }

func getenvString(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
}

let loopCount = getenvString("LOOPS").flatMap { Int($0) } ?? EventLoopGroup.defaultLoopCount
let server = try Server.start(configuration: configuration, group: EventLoopGroup(loopCount: loopCount)) {
    request,
    responder in
    switch request.path {
    case "/health":
        responder.respond(headers: jsonHeaders, body: healthBody)
    case "/sequences/fibonacci":
        guard let count = count(in: request.query), (0...93).contains(count) else {
            responder.respond(status: .badRequest, headers: textHeaders, body: "count must be an integer in 0...93\n")
            return
        }
        responder.respond(headers: jsonHeaders, body: fibonacciJSON(count: count))
    default:
        responder.respond(status: .notFound, headers: textHeaders, body: "not found\n")
    }
}
print("http-bench-server listening on 127.0.0.1:\(server.port)")
dispatchMain()
