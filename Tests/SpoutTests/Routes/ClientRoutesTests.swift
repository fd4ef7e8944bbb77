import Foundation
import TestSupport
import Testing

@testable import Spout

/// `GET /`, `/client/spout.js` and `/client/spout.d.ts` over HTTP: the files of `Sources/Spout/Client` as they
/// are in the source tree, with their media types, validators and the page's Content-Security-Policy. (What a
/// browser does with them is in ``ClientBrowserTests``.)
@Suite(.offPool) struct ClientRoutesTests {
    static let clientDirectory = RouteTest.repositoryRoot.appendingPathComponent("Sources/Spout/Client")

    @Test(arguments: [
        ("/", "index.html", "text/html; charset=utf-8"),
        ("/client/spout.js", "spout.js", "text/javascript; charset=utf-8"),
        ("/client/spout.d.ts", "spout.d.ts", "text/typescript; charset=utf-8"),
    ])
    func eachFileIsServedAsItIsInTheSourceTreeAndRevalidatesWithItsETag(
        path: String,
        file: String,
        mediaType: String
    ) async throws {
        let server = try SpoutTestServer()
        let onDisk = try [UInt8](Data(contentsOf: Self.clientDirectory.appendingPathComponent(file)))

        let response = try server.get(path)
        #expect(response.status == 200)
        #expect(response.body == onDisk, "the embedded bytes are the file's")
        #expect(response.header("Content-Type") == mediaType)
        #expect(response.header("X-Content-Type-Options") == "nosniff")
        #expect(response.header("Cache-Control") == "no-cache")
        #expect(response.header("Access-Control-Allow-Origin") == "*", "an app on another origin may import it")
        let tag = try #require(response.header("ETag"))
        #expect(tag.hasPrefix("\"") && tag.hasSuffix("\""), "a strong tag")

        let revalidated = try server.get(path, headers: ["If-None-Match: \(tag)"])
        #expect(revalidated.status == 304)
        #expect(revalidated.body.isEmpty)
        #expect(revalidated.header("ETag") == tag)
        #expect(revalidated.header("Cache-Control") == "no-cache")
        #expect(try server.get(path, headers: [#"If-None-Match: "other""#]).status == 200)

        let unknown = try server.get(path + "?zz=1")
        #expect(unknown.status == 400)
        #expect(RouteTest.object(unknown.body)["parameter"] as? String == "zz")
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func thePagesPolicyAllowsItsOwnInlineScriptAndStyleByHashAndNothingElseInline() async throws {
        let server = try SpoutTestServer()
        let response = try server.get("/")
        let policy = try #require(response.header("Content-Security-Policy"))
        let directives = Dictionary(
            uniqueKeysWithValues: policy.split(separator: ";").map { directive in
                let words = directive.split(separator: " ").map(String.init)
                return (words[0], Array(words.dropFirst()))
            }
        )
        #expect(directives["default-src"] == ["'none'"])
        #expect(directives["connect-src"] == ["'self'"])
        #expect(directives["frame-ancestors"] == ["'none'"])

        // The hashes are those of the page's inline elements, computed here independently of the route.
        let html = response.text
        func hashes(of element: String) -> [String] {
            html.components(separatedBy: "<\(element)").dropFirst().compactMap { rest -> String? in
                guard let open = rest.firstIndex(of: ">"), let close = rest.range(of: "</\(element)>") else {
                    return nil
                }
                let content = Array(rest[rest.index(after: open)..<close.lowerBound].utf8)
                return "'sha256-" + Data(SHA256.digest(content)).base64EncodedString() + "'"
            }
        }
        #expect(hashes(of: "script").count == 1)
        #expect(directives["script-src"] == ["'self'"] + hashes(of: "script"))
        #expect(hashes(of: "style").count == 1)
        #expect(directives["style-src"] == hashes(of: "style"))
        #expect(!policy.contains("unsafe"))
        // No inline handler or style attribute, which the policy would block.
        #expect(!html.contains(" style=\"") && !html.contains(" onclick="))
        await server.stop()
    }

    @Test func theHashingFindsEveryInlineElement() {
        let html = Array("<p><script>a</script><style>b{}</style><script type=\"module\">c()</script>".utf8)
        #expect(
            ClientRoutes.inlineElements("script", in: html).map { String(decoding: $0, as: UTF8.self) } == ["a", "c()"]
        )
        #expect(ClientRoutes.inlineElements("style", in: html).map { String(decoding: $0, as: UTF8.self) } == ["b{}"])
        #expect(ClientRoutes.inlineElements("script", in: Array("<script>unclosed".utf8)).isEmpty)
        #expect(ClientRoutes.inlineElements("script", in: []).isEmpty)
    }
}
