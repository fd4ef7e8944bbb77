import Foundation
import TestSupport
import Testing

@testable import Spout

/// The holes in channel input checking that issue 26 found: dot-segment channel names, C1 control characters in
/// event types, and a repeated `Authorization` header, each over real loopback sockets.
@Suite(.offPool) struct ChannelInputTests {
    /// The `type` of a problem answer, or nil if it is not one.
    static func problemType(_ response: LoopbackClient.Response) -> String? {
        guard response.header("Content-Type") == "application/problem+json" else { return nil }
        let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return object?["type"] as? String
    }

    @Test func dotSegmentsAreNoChannelNames() async throws {
        let server = try SpoutTestServer()
        let http = try ChannelHTTP(port: server.port)
        for name in [".", ".."] {
            for (method, path) in [
                ("GET", "/channels/\(name)"), ("GET", "/channels/\(name)/latest"), ("POST", "/channels/\(name)/events"),
            ] {
                let response = try http.send(
                    method,
                    path,
                    body: method == "POST" ? Array(#"{"data":1}"#.utf8) : [],
                    contentType: method == "POST" ? "application/json" : nil
                )
                #expect(response.status == 400, "\(method) \(path): \(response)")
                #expect(Self.problemType(response) == "/problems/invalid-parameter", "\(method) \(path)")
                #expect(response.text.contains("not '.' or '..'"), "\(method) \(path): the rule is named")
            }
        }
        // Names that merely contain dots are still names.
        for name in ["...", ".a", "a..b", "..."] {
            #expect(try http.publish(name, channelBody([1])).status == 202, "\(name)")
        }
        #expect(try server.channelList()["."] == nil)
        #expect(try server.channelList()[".."] == nil)
        await server.stop()
    }

    @Test(arguments: [
        ("NEL, escaped", #"{"data":1,"event":"a\u0085b"}"#),
        ("U+0080, escaped", #"{"data":1,"event":"\u0080"}"#),
        ("U+009F, escaped", #"{"data":1,"event":"x\u009f"}"#),
        ("NEL, raw UTF-8", "{\"data\":1,\"event\":\"a\u{85}b\"}"),
        ("U+009B (CSI), raw UTF-8", "{\"data\":1,\"event\":\"\u{9B}31m\"}"),
        ("DEL", #"{"data":1,"event":"a\u007fb"}"#),
        ("a C0 control", #"{"data":1,"event":"a\u0001b"}"#),
    ])
    func controlCharactersOfEveryKindAreRefusedInEventTypes(_ what: String, _ body: String) async throws {
        let server = try SpoutTestServer()
        let http = try ChannelHTTP(port: server.port)
        let response = try http.publish("typed", body)
        #expect(response.status == 400, "\(what): \(response)")
        #expect(Self.problemType(response) == "/problems/invalid-body", "\(what)")
        #expect(response.text.contains("without control characters"), "\(what)")
        #expect(try server.get("/channels/typed/latest").status == 404, "\(what): nothing was published")
        // The characters right past the C1 block are letters, and still fine.
        #expect(try http.publish("typed", #"{"data":1,"event":"\u00a0\u00e9"}"#).status == 202)
        await server.stop()
    }

    @Test func aRepeatedAuthorizationHeaderIs400() async throws {
        let server = try SpoutTestServer {
            $0.channels.publishTokens = ["pub-one"]
            $0.channels.subscribeTokens = ["watch"]
        }
        let http = try ChannelHTTP(port: server.port)
        // Valid then invalid, invalid then valid, valid twice: none of them is for the server to pick from.
        for pair in [("pub-one", "nope"), ("nope", "pub-one"), ("pub-one", "pub-one")] {
            let headers = ["Authorization: Bearer \(pair.0)", "Authorization: Bearer \(pair.1)"]
            let publish = try http.publish("guarded", channelBody([1]), headers: headers)
            #expect(publish.status == 400, "\(pair): \(publish)")
            #expect(Self.problemType(publish) == "/problems/invalid-parameter")
            #expect(publish.text.contains(#""parameter":"Authorization""#), "\(publish)")
        }
        let subscribe = try server.get(
            "/channels/guarded/latest",
            headers: ["Authorization: Bearer watch", "Authorization: Bearer nope"]
        )
        #expect(subscribe.status == 400, "\(subscribe)")
        #expect(try server.get("/channels/guarded/latest", headers: ["Authorization: Bearer watch"]).status == 404)
        // One header still decides as before.
        #expect(
            try http.publish("guarded", channelBody([2]), headers: ["Authorization: Bearer pub-one"]).status == 202
        )
        #expect(
            try server.get("/channels/guarded/latest", headers: ["Authorization: Bearer watch"]).status == 200
        )
        await server.stop()
    }
}
