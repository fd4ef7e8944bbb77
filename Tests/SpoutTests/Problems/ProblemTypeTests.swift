import Foundation
import TestSupport
import Testing

@testable import Spout

/// The problem catalogue: every `type` Spout can emit is in it, and every one resolves to its page.
@Suite(.offPool) struct ProblemTypeTests {
    @Test func everyCataloguedTypeResolvesToItsPage() async throws {
        let server = try SpoutTestServer()
        for type in ProblemType.all {
            let response = try server.get(type.uri)
            #expect(response.status == 200, "\(type.uri)")
            #expect(response.header("Content-Type") == "text/html; charset=utf-8")
            #expect(response.header("Cache-Control") == "max-age=86400")
            let html = response.text
            #expect(html.hasPrefix("<!doctype html>"))
            #expect(html.contains("<h1>\(type.title)</h1>"))
            #expect(html.contains(type.statuses.map(String.init).joined(separator: ", ")))
            for member in type.members { #expect(html.contains("<code>\(member.name)</code>")) }
            let tag = try #require(response.header("ETag"))
            let again = try server.get(type.uri, headers: ["If-None-Match: \(tag)"])
            #expect(again.status == 304)
        }
        #expect(server.isHealthy())
        await server.stop()
    }

    @Test func theTypesOfProblemsSentOverTheWireResolve() async throws {
        let server = try SpoutTestServer()
        // One request per kind the demo setup can provoke; each body's type is fetched as a page.
        let provoked: [(String, [String], Int)] = [
            ("/sequences/fibonacci?count=abc", [], 400),
            ("/sequences/nope", [], 404),
            ("/nowhere", [], 404),
            ("/sequences/fibonacci?count=1", ["Accept: text/html"], 406),
        ]
        for (path, headers, status) in provoked {
            let response = try server.get(path, headers: headers)
            #expect(response.status == status)
            let type = try #require(RouteTest.object(response.body)["type"] as? String)
            #expect(ProblemType.named(uri: type) != nil)
            #expect(try server.get(type).status == 200)
        }
        let client = try server.connect()
        defer { client.close() }
        try client.send("DELETE /health HTTP/1.1\r\nHost: x\r\n\r\n")
        let refused = try client.readResponse()
        #expect(refused.status == 405)
        #expect(RouteTest.object(refused.body)["type"] as? String == ProblemType.methodNotAllowed.uri)
        // TRACE is known and refused like DELETE, not "not implemented".
        try client.send("TRACE /articles HTTP/1.1\r\nHost: x\r\n\r\n")
        let trace = try client.readResponse()
        #expect(trace.status == 405)
        #expect(trace.header("Allow") == "GET, HEAD, OPTIONS")
        await server.stop()
    }

    @Test func anUnknownTypeIsNotFoundAndQueriesAreRefused() async throws {
        let server = try SpoutTestServer()
        let unknown = try server.get("/problems/teapot")
        #expect(unknown.status == 404)
        #expect(unknown.header("Content-Type") == Problem.mediaType)
        #expect(
            (RouteTest.object(unknown.body)["detail"] as? String)?.contains("known types: invalid-parameter") == true
        )
        let query = try server.get("/problems/not-found?lang=fr")
        #expect(query.status == 400)
        #expect(RouteTest.object(query.body)["parameter"] as? String == "lang")
        await server.stop()
    }

    @Test func theCatalogueIsConsistent() {
        let slugs = ProblemType.all.map(\.slug)
        #expect(Set(slugs).count == slugs.count)
        #expect(slugs.allSatisfy { $0.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D } })
        #expect(ProblemType.all.allSatisfy { !$0.statuses.isEmpty && $0.statuses.allSatisfy((400...599).contains) })
        let kinds = [
            Problem.Kind.invalidParameter, Problem.Kind.notFound, Problem.Kind.methodNotAllowed,
            Problem.Kind.notAcceptable,
            Problem.Kind.upstreamFailed, Problem.Kind.upstreamTimeout, Problem.Kind.upstreamUnavailable,
            Problem.Kind.unavailable,
            Problem.Kind.invalidBody, Problem.Kind.contentTooLarge, Problem.Kind.requestHeadTooLarge,
            Problem.Kind.unsupportedMediaType,
            Problem.Kind.unauthorized, Problem.Kind.forbidden, Problem.Kind.outcomeUnknown,
            Problem.Kind.idempotencyKeyInFlight, Problem.Kind.idempotencyKeyReused,
            Problem.Kind.tokenInvalid, Problem.Kind.tokenExpired, Problem.Kind.tokenSignatureInvalid,
            Problem.Kind.tokenKeyUnknown, Problem.Kind.channelNotGranted, Problem.Kind.rateLimited,
            Problem.Kind.tooManySubscriptions,
        ]
        #expect(kinds == ProblemType.all.map(\.uri))
        #expect(Problem.invalidParameter("x", "y").title == ProblemType.invalidParameter.title)
        #expect(ProblemPage.escaped(#"<a href="x">&</a>"#) == "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;")
    }

    /// Problems are made with a `type` from ``Problem/Kind`` (the catalogue) and never with a string of their
    /// own: no source line outside `Sources/Spout/Problems` spells a `/problems/…` URI, and every `type:`
    /// argument of a `Problem(…)` and every assignment to a problem's `type` names a `Kind`.
    @Test func noSourceMakesATypeOutsideTheCatalogue() throws {
        let sources = RouteTest.repositoryRoot.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
            .compactMap { $0 as? URL }
            .filter { $0.pathExtension == "swift" }
        #expect(files.count > 50)
        var offenders: [String] = []
        // The catalogue's own folder defines `Problem` and its factories (which take `Kind`s).
        for file in files where file.deletingLastPathComponent().lastPathComponent != "Problems" {
            let text = try String(contentsOf: file, encoding: .utf8)
            let code = text.split(separator: "\n", omittingEmptySubsequences: false)
                .map { line in line.trimmingCharacters(in: .whitespaces).hasPrefix("//") ? "" : String(line) }
                .joined(separator: "\n")
            let name = file.lastPathComponent
            if code.range(of: #"/problems/[a-z0-9]"#, options: .regularExpression) != nil {
                offenders.append("\(name): spells a /problems/ URI")
            }
            for argument in Self.typeArgumentsOfProblemInitialisers(in: code) where !argument.contains("Kind.") {
                offenders.append("\(name): Problem(type: \(argument))")
            }
            var rest = code[...]
            // `self.type = …` outside the Problems folder sets some other type's own member (a channel event's
            // SSE type), never a problem's, whose type is set only in its own folder.
            while let range = rest.range(of: #"(?<!self)\.type\s*=\s*[^=]"#, options: .regularExpression) {
                let line = rest[range.lowerBound...].prefix { $0 != "\n" }
                if !line.contains("Kind.") { offenders.append("\(name): \(line)") }
                rest = rest[range.upperBound...]
            }
        }
        #expect(offenders == [])
    }

    /// The text of each `type:` argument in the `Problem(…)` calls of `code`.
    static func typeArgumentsOfProblemInitialisers(in code: String) -> [String] {
        var arguments: [String] = []
        var rest = code[...]
        while let call = rest.range(of: #"(?<![A-Za-z0-9_])Problem\("#, options: .regularExpression) {
            var depth = 1
            var index = call.upperBound
            while index < rest.endIndex && depth > 0 {
                if rest[index] == "(" { depth += 1 }
                if rest[index] == ")" { depth -= 1 }
                index = rest.index(after: index)
            }
            let body = rest[call.upperBound..<index]
            if let label = body.range(of: #"(?<![A-Za-z0-9_])type:"#, options: .regularExpression) {
                let argument = body[label.upperBound...].prefix { $0 != "," && $0 != "\n" }
                arguments.append(argument.trimmingCharacters(in: .whitespaces))
            }
            rest = rest[call.upperBound...]
        }
        return arguments
    }
}
