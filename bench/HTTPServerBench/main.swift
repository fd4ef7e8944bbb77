// Benchmark server for bench/http_rps.sh: the bare HTTPServer module, no router, no publishers.
//
//   GET /health                                   -> {"status":"ok"} (application/json)
//   GET /sequences/fibonacci?count=N (N <= 93)    -> {"values":["0","1",...]} with Accept: application/json
//   GET /sequences/naturals?count=N               -> SSE "id: i\ndata: i\n\n" for i in 0..<N, written through
//                                                    BodyWriter's fast append path while writable (checks the
//                                                    streaming design with the sse_*.py load scripts; not in rps.sh)
//
// Port from the environment variable PORT (default 8080); binds 127.0.0.1.
import Dispatch
import EventLoops
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
/// Streams `count` naturals as SSE, formatting straight into the outbound buffer while the writer is writable.
final class NaturalsStream: @unchecked Sendable {  // Confined to the writer's loop.
    private let writer: BodyWriter
    private let count: UInt64
    private var next: UInt64 = 0

    init(writer: BodyWriter, count: UInt64) {
        self.writer = writer
        self.count = count
    }

    func start() {
        writer.onWritable = { [self] in pump() }
        writer.onShutdown = { [self] in writer.finish() }
        writer.onClose = { [self] in writer.onWritable = nil }
        pump()
    }

    private func pump() {
        while next < count, writer.isWritable {
            var budget = writer.writableBytes
            writer.withAppendBuffer { buffer in
                while next < count, budget > 0 {
                    let before = buffer.count
                    buffer.append("id: " as String)
                    buffer.appendDecimal(next)
                    buffer.append("\ndata: " as String)
                    buffer.appendDecimal(next)
                    buffer.append("\n\n" as String)
                    budget -= buffer.count - before
                    next += 1
                }
            }
        }
        if next == count { writer.finish() }
    }
}

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
    case "/sequences/naturals":
        guard let count = count(in: request.query), count >= 0 else {
            responder.respond(status: .badRequest, headers: textHeaders, body: "count must be a non-negative integer\n")
            return
        }
        let writer = responder.startStreaming(
            headers: ["Content-Type": "text/event-stream", "Cache-Control": "no-cache"]
        )
        NaturalsStream(writer: writer, count: UInt64(count)).start()
    default:
        responder.respond(status: .notFound, headers: textHeaders, body: "not found\n")
    }
}
print("http-bench-server listening on 127.0.0.1:\(server.port)")
dispatchMain()
