import Foundation
import HTTPServer

/// `GET /`, `GET /client/spout.js` and `GET /client/spout.d.ts`: the page that shows the service live, and the
/// browser client that shares one channel subscription among the tabs of an origin.
///
/// The three are real files under `Sources/Spout/Client`, compiled into the binary by SwiftPM
/// (`.embedInCode`, as ``PackageResources``): nothing is read from disk at run time, so `swift run spout` and
/// the container image serve them as they are. Each is served with a strong `ETag` and `Cache-Control:
/// no-cache` (a deploy may change them; a revalidation is a cheap `304`), as `/openapi.json` is.
///
/// **Thread safety:** stateless; the files are immutable statics built once.
enum ClientRoutes {
    /// One embedded file: its bytes, its tag and the header fields it is served with.
    ///
    /// **Thread safety:** immutable.
    struct File: Sendable {
        let bytes: [UInt8]
        let tag: EntityTag
        let mediaType: String
        /// Fields besides `Content-Type`: `nosniff`, and the page's `Content-Security-Policy`.
        let fields: [(name: String, value: String)]

        init(_ bytes: [UInt8], mediaType: String, fields: [(name: String, value: String)] = []) {
            self.bytes = bytes
            tag = EntityTag.digest(of: bytes)
            self.mediaType = mediaType
            self.fields = [("X-Content-Type-Options", "nosniff")] + fields
        }
    }

    /// A deploy may change the files: reuse only after a revalidation.
    static let cacheControl = "no-cache"

    static let page = File(
        PackageResources.index_html,
        mediaType: "text/html; charset=utf-8",
        fields: [("Content-Security-Policy", contentSecurityPolicy(for: PackageResources.index_html))]
    )
    static let script = File(PackageResources.spout_js, mediaType: "text/javascript; charset=utf-8")
    /// `text/typescript`, which Deno reads as TypeScript, rather than `application/typescript`, which generated
    /// OpenAPI clients do not take for text.
    static let types = File(PackageResources.spout_d_ts, mediaType: "text/typescript; charset=utf-8")

    /// `GET /`: the page.
    static let index: Routes.PlainHandler = { context in serve(page, context) }

    /// `GET /client/spout.js`: the client, an ES module.
    static let client: Routes.PlainHandler = { context in serve(script, context) }

    /// `GET /client/spout.d.ts`: the client's TypeScript declarations.
    static let declarations: Routes.PlainHandler = { context in serve(types, context) }

    private static func serve(_ file: File, _ context: RequestContext) {
        do throws(Problem) {
            _ = try QueryParameters(query: context.request, known: [])
        } catch {
            context.respond(problem: error)
            return
        }
        let validator = Validator(tag: file.tag, cacheControl: cacheControl)
        if context.respondNotModified(validator, contentType: file.mediaType) { return }
        var headers: Headers = ["Content-Type": file.mediaType]
        for field in file.fields { headers.add(name: field.name, value: field.value) }
        context.respond(headers: headers, body: file.bytes, validator: validator)
    }

    /// The page's policy: its own inline `<script>` and `<style>` elements by their SHA-256 (so no other inline
    /// code runs, whatever a channel's events hold), scripts and connections to this origin only, nothing else.
    static func contentSecurityPolicy(for html: [UInt8]) -> String {
        let scripts = inlineElements("script", in: html).map(hashSource)
        let styles = inlineElements("style", in: html).map(hashSource)
        let directives = [
            "default-src 'none'",
            (["script-src", "'self'"] + scripts).joined(separator: " "),
            (["style-src"] + (styles.isEmpty ? ["'none'"] : styles)).joined(separator: " "),
            "img-src data:",
            "connect-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ]
        return directives.joined(separator: "; ")
    }

    /// `'sha256-…'` of `content`, as CSP names an inline element.
    private static func hashSource(_ content: ArraySlice<UInt8>) -> String {
        "'sha256-" + Data(SHA256.digest(content)).base64EncodedString() + "'"
    }

    /// The contents of every `<name …>…</name>` element of `html` (lower-case tags, as the page writes them).
    static func inlineElements(_ name: String, in html: [UInt8]) -> [ArraySlice<UInt8>] {
        let open = Array("<\(name)".utf8)
        let close = Array("</\(name)>".utf8)
        var found: [ArraySlice<UInt8>] = []
        var index = html.startIndex
        while let start = firstIndex(of: open, in: html, from: index) {
            guard let tagEnd = html[start...].firstIndex(of: UInt8(ascii: ">")),
                let end = firstIndex(of: close, in: html, from: tagEnd + 1)
            else { break }
            found.append(html[(tagEnd + 1)..<end])
            index = end + close.count
        }
        return found
    }

    private static func firstIndex(of needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
        for index in start...(bytes.count - needle.count)
        where bytes[index..<(index + needle.count)].elementsEqual(needle) {
            return index
        }
        return nil
    }
}
