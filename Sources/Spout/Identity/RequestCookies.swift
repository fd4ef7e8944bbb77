import HTTPServer

/// Reads one cookie of a request's `Cookie` header fields (RFC 6265 §5.4: `name=value` pairs separated by `; `).
///
/// **Thread safety:** stateless.
enum RequestCookies {
    /// The value of the first cookie called `name` (case-sensitive, as cookie names are), with a value's
    /// surrounding double quotes removed; `nil` when there is none or it is empty.
    static func value(named name: String, in headers: Headers) -> String? {
        for field in headers.values(for: "Cookie") {
            for pair in field.split(separator: ";") {
                let trimmed = pair.drop { $0 == " " || $0 == "\t" }
                guard let equals = trimmed.firstIndex(of: "="), trimmed[..<equals] == name[...] else { continue }
                var value = trimmed[trimmed.index(after: equals)...]
                while value.last == " " || value.last == "\t" { value = value.dropLast() }
                if value.count >= 2, value.first == "\"", value.last == "\"" {
                    value = value.dropFirst().dropLast()
                }
                return value.isEmpty ? nil : String(value)
            }
        }
        return nil
    }
}
