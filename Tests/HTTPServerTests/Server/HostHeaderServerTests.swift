import Foundation
import HTTPServer
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `Host` validation as a client sees it: a bad value is a `400` and a close, while what real clients send
/// (names, IPv4 and bracketed IPv6 literals with ports) is served.
@Suite(.offPool) struct HostHeaderServerTests {
    @Test(arguments: ["a b", "user@host", "example.com/x", "example.com:99999", "[::1", ""])
    func invalidHostGets400AndAClose(value: String) throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        try client.send("GET /health HTTP/1.1\r\nHost: \(value)\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 400)
        #expect(response.header("connection")?.lowercased() == "close")
        #expect(response.text.contains("host header"))
        #expect(client.waitForClose())
        try server.expectHealthy()
    }

    // URLSession on Linux rejects IPv6-literal URLs (NSURLErrorBadURL) before sending anything, so the bracketed
    // literal is checked with the raw client below.
    @Test func urlSessionRequestsAreServed() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let url = try #require(URL(string: "http://127.0.0.1:\(server.port)/health"))
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let (status, body) = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<(Int, String), any Error>) in
            session.dataTask(with: url) { data, response, error in
                if let error {
                    continuation.resume(throwing: error)
                } else {
                    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                    continuation.resume(returning: (status, String(decoding: data ?? Data(), as: UTF8.self)))
                }
            }.resume()
        }
        #expect(status == 200)
        #expect(body == "ok")
    }

    @Test func bracketedIPv6HostWithAPortIsServed() throws {
        let server = try TestServer(host: "::1")
        defer { server.stop() }
        let client = try server.connect(host: "::1")
        try client.send("GET /health HTTP/1.1\r\nHost: [::1]:\(server.port)\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        try server.expectHealthy(host: "::1")
    }

    @Test func http10WithoutHostIsServed() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.connect()
        try client.send("GET /health HTTP/1.0\r\n\r\n")
        #expect(try client.readResponse().status == 200)
    }
}
