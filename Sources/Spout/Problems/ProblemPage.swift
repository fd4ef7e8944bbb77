/// The HTML page a problem `type` URI resolves to: what a developer who pastes `/problems/not-found` into a
/// browser reads. Plain, self-contained HTML (no scripts, no external resources), built once per type.
///
/// **Thread safety:** value type; the pages are immutable statics.
struct ProblemPage: Sendable {
    let type: ProblemType
    let bytes: [UInt8]
    let tag: EntityTag

    /// The media type of the pages.
    static let mediaType = "text/html; charset=utf-8"

    /// Every catalogued type's page, in catalogue order.
    static let all: [ProblemPage] = ProblemType.all.map(ProblemPage.init)

    /// The page of the type whose slug is `slug`, if any.
    static func page(slug: String) -> ProblemPage? {
        all.first { $0.type.slug == slug }
    }

    init(_ type: ProblemType) {
        self.type = type
        var html = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <title>\(Self.escaped(type.title)) — Spout problem type</title>
            <style>body{font:16px/1.5 system-ui,sans-serif;max-width:44em;margin:2em auto;padding:0 1em}\
            code{background:#f3f3f3;padding:0 .2em}td,th{text-align:left;padding:.2em .8em .2em 0;vertical-align:top}</style>
            </head>
            <body>
            <h1>\(Self.escaped(type.title))</h1>
            <p><code>type</code>: <code>\(Self.escaped(type.uri))</code> · \
            status \(type.statuses.map(String.init).joined(separator: ", ")) · \
            <code>Content-Type: application/problem+json</code> (RFC 9457)</p>
            <h2>What it means</h2>
            <p>\(Self.escaped(type.meaning))</p>
            <h2>What to do</h2>
            <p>\(Self.escaped(type.remedy))</p>

            """
        html += "<h2>Members</h2>\n<table>\n<tr><th>member</th><th>type</th><th>holds</th></tr>\n"
        let standard: [ProblemType.Member] = [
            .init(name: "type", jsonType: "string", meaning: "this page's path"),
            .init(name: "title", jsonType: "string", meaning: "\"\(type.title)\", the same every time"),
            .init(name: "status", jsonType: "integer", meaning: "the HTTP status"),
            .init(name: "detail", jsonType: "string", meaning: "what was wrong with this request, naming the input"),
            .init(name: "instance", jsonType: "string", meaning: "the request's path"),
        ]
        for member in standard + type.members {
            html += "<tr><td><code>\(Self.escaped(member.name))</code></td><td>\(member.jsonType)</td>"
            html += "<td>\(Self.escaped(member.meaning))</td></tr>\n"
        }
        html += """
            </table>
            <p>Every route, parameter and problem type: <a href="/openapi.json">/openapi.json</a>.</p>
            </body>
            </html>

            """
        bytes = Array(html.utf8)
        tag = EntityTag.digest(of: bytes)
    }

    /// `text` with `&`, `<`, `>` and `"` as entities.
    static func escaped(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            default: result.append(character)
            }
        }
        return result
    }
}
