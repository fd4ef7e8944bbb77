import Foundation
import TestSupport
import Testing

@testable import Spout

/// `gzip` for JSON bodies over real sockets, decoded by a decoder that is not ours.
@Suite(.offPool, .enabled(if: Gzip.shared != nil)) struct CompressionTests {
    /// 200 naturals: 1,191 bytes of JSON, above the default 1,024.
    static let path = "/sequences/naturals?count=200&format=json"

    @Test(.enabled(if: RealGzipDecoder.isAvailable)) func aClientThatPrefersGzipGetsTheSameDocumentCoded() async throws
    {
        let server = try SpoutTestServer()
        let plain = try server.get(Self.path)
        #expect(plain.header("Content-Encoding") == nil)
        #expect(plain.body.count > 1_024)
        let coded = try server.get(Self.path, headers: ["Accept-Encoding: gzip, deflate, br"])
        #expect(coded.status == 200)
        #expect(coded.header("Content-Encoding") == "gzip")
        #expect(coded.header("Content-Type") == "application/json")
        #expect(coded.header("Vary") == plain.header("Vary"))
        #expect(coded.header("Vary") == "Accept, Accept-Encoding")
        #expect(coded.header("Content-Length") == String(coded.body.count))
        #expect(coded.body.count < plain.body.count)
        #expect(try RealGzipDecoder.gunzip(coded.body) == plain.body)
        // Different bytes, different strong tags (RFC 9110 §8.8.3): the coded tag names the coder.
        let gzip = try #require(Gzip.shared)
        #expect(plain.header("ETag") == #""s1-naturals-0-200""#)
        #expect(coded.header("ETag") == "\"s1-naturals-0-200.\(gzip.coding)\"")
        await server.stop()
    }

    @Test func revalidationComparesTheTagOfWhatThisClientWouldGet() async throws {
        let server = try SpoutTestServer()
        let coded = try #require(try server.get(Self.path, headers: ["Accept-Encoding: gzip"]).header("ETag"))
        // The coded tag matches for a client that takes gzip ...
        let again = try server.get(Self.path, headers: ["Accept-Encoding: gzip", "If-None-Match: \(coded)"])
        #expect(again.status == 304)
        #expect(again.header("ETag") == coded)
        // ... not for one that does not: it would be told to use a body it cannot read.
        let refused = try server.get(Self.path, headers: ["If-None-Match: \(coded)"])
        #expect(refused.status == 200)
        #expect(refused.header("Content-Encoding") == nil)
        // The uncoded tag is a body every client can read.
        let identity = try server.get(
            Self.path,
            headers: ["Accept-Encoding: gzip", #"If-None-Match: "s1-naturals-0-200""#]
        )
        #expect(identity.status == 304)
        #expect(identity.header("ETag") == #""s1-naturals-0-200""#)
        await server.stop()
    }

    @Test(
        arguments: [
            ("gzip;q=0", false),
            ("deflate, br", false),
            ("identity, gzip;q=0.5", false),
            ("*", true),
            ("x-gzip", true),
            ("gzip;q=0.1, identity;q=0", true),
        ] as [(String, Bool)]
    )
    func qualityValuesDecide(acceptEncoding: String, coded: Bool) async throws {
        let server = try SpoutTestServer()
        let response = try server.get(Self.path, headers: ["Accept-Encoding: \(acceptEncoding)"])
        #expect(response.status == 200)
        #expect((response.header("Content-Encoding") == "gzip") == coded)
        await server.stop()
    }

    @Test(.enabled(if: RealGzipDecoder.isAvailable)) func smallBodiesStayUncodedUnlessIdentityIsRefused() async throws {
        let server = try SpoutTestServer()
        let small = "/sequences/naturals?count=3&format=json"
        let plain = try server.get(small, headers: ["Accept-Encoding: gzip"])
        #expect(plain.header("Content-Encoding") == nil)
        #expect(plain.header("ETag") == #""s1-naturals-0-3""#)
        let forced = try server.get(small, headers: ["Accept-Encoding: gzip, identity;q=0"])
        #expect(forced.header("Content-Encoding") == "gzip")
        #expect(try RealGzipDecoder.gunzip(forced.body) == plain.body)
        await server.stop()
    }

    @Test(.enabled(if: RealGzipDecoder.isAvailable)) func aLargeDocumentIsCodedOffTheLoop() async throws {
        let server = try SpoutTestServer()
        // About 400 KB of digits: coded on a worker, then answered on the loop.
        let path = "/sequences/fibonacci?count=2000&format=json"
        let plain = try server.get(path)
        let coded = try server.get(path, headers: ["Accept-Encoding: gzip"], timeout: .seconds(30))
        #expect(plain.body.count > 300_000)
        #expect(coded.header("Content-Encoding") == "gzip")
        #expect(try RealGzipDecoder.gunzip(coded.body) == plain.body)
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test(.enabled(if: RealGzipDecoder.isAvailable)) func problemsAndTheOpenAPIDocumentAreCodedToo() async throws {
        let server = try SpoutTestServer { $0.compression.minimumBytes = 100 }
        let problem = try server.get("/sequences/fibonacci?cout=3", headers: ["Accept-Encoding: gzip"])
        #expect(problem.status == 400)
        #expect(problem.header("Content-Type") == Problem.mediaType)
        #expect(problem.header("Content-Encoding") == "gzip")
        let decoded = try #require(try RealGzipDecoder.gunzip(problem.body))
        #expect(RouteTest.object(decoded)["parameter"] as? String == "cout")
        let document = try server.get("/openapi.json", headers: ["Accept-Encoding: gzip"])
        #expect(document.header("Content-Encoding") == "gzip")
        #expect(try RealGzipDecoder.gunzip(document.body) == server.get("/openapi.json").body)
        await server.stop()
    }

    @Test func streamsServiceRoutesAndTheDemoUpstreamAreNeverCoded() async throws {
        let server = try SpoutTestServer { $0.compression.minimumBytes = 0 }
        for path in ["/metrics", "/health", "/demo/posts", "/problems/not-found"] {
            let response = try server.get(path, headers: ["Accept-Encoding: gzip"])
            #expect(response.status == 200)
            #expect(response.header("Content-Encoding") == nil, "\(path)")
        }
        let client = try server.connect()
        defer { client.close() }
        try client.sendGet("/sequences/naturals?count=500", headers: ["Accept-Encoding: gzip"])
        let stream = try client.readResponse()
        #expect(stream.header("Content-Encoding") == nil)
        #expect(String(decoding: stream.body, as: UTF8.self).contains("id: 499\ndata: 499\n"))
        await server.stop()
    }

    @Test func turnedOffNothingIsCodedAndNothingVariesOnAcceptEncoding() async throws {
        let server = try SpoutTestServer { $0.compression.enabled = false }
        let response = try server.get(Self.path, headers: ["Accept-Encoding: gzip"])
        #expect(response.header("Content-Encoding") == nil)
        #expect(response.header("Vary") == "Accept")
        #expect(response.header("ETag") == #""s1-naturals-0-200""#)
        await server.stop()
    }
}
