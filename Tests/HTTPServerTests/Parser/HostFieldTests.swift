import Testing

@testable import HTTPServer

/// A request whose `Host` makes it invalid, with the error and status; or a valid one (`error == nil`).
struct HostSample: CustomTestStringConvertible, Sendable {
    var name: String
    var input: [UInt8]
    var error: ParseError?

    var testDescription: String { name }

    /// `GET / HTTP/1.1` with `Host: value`.
    init(_ name: String, host value: [UInt8], _ error: ParseError?) {
        self.name = name
        input = "GET / HTTP/1.1\r\nHost: ".bytes + value + "\r\n\r\n".bytes
        self.error = error
    }

    init(_ name: String, host value: String, _ error: ParseError?) {
        self.init(name, host: value.bytes, error)
    }

    /// A whole request.
    init(_ name: String, request: String, _ error: ParseError?) {
        self.name = name
        input = request.bytes
        self.error = error
    }
}

private func invalid(_ name: String, _ value: String, shown: String? = nil) -> HostSample {
    HostSample(name, host: value, .invalidHost(shown ?? value))
}

private func valid(_ name: String, _ value: String) -> HostSample {
    HostSample(name, host: value, nil)
}

let invalidHostSamples: [HostSample] = [
    invalid("space inside", "a b"),
    invalid("userinfo", "user@example.com"),
    invalid("userinfo with password", "user:pass@example.com", shown: "user:pass@example.com"),
    invalid("path", "example.com/path"),
    invalid("query", "example.com?x"),
    invalid("fragment", "example.com#x"),
    invalid("backslash", "example.com\\evil", shown: "example.com\\x5cevil"),
    invalid("double quote", "exa\"mple", shown: "exa\\x22mple"),
    invalid("angle brackets", "<script>"),
    invalid("curly brace", "a{b"),
    invalid("caret", "a^b"),
    invalid("pipe", "a|b"),
    invalid("backtick", "a`b"),
    HostSample("control byte SOH", host: [0x61, 0x01, 0x62], .invalidHeaderValue(name: "Host")),
    HostSample("tab inside", host: [0x61, 0x09, 0x62], .invalidHost("a\\x09b")),
    HostSample("non-ASCII byte", host: [0x61, 0xC3, 0xA9], .invalidHost("a\\xc3\\xa9")),
    invalid("bad percent escape", "a%zzb"),
    invalid("truncated percent escape", "a%4"),
    invalid("lone percent", "%"),
    invalid("empty on an origin-form request", ""),
    invalid("port only", ":8080"),
    invalid("letters in the port", "example.com:http"),
    invalid("negative port", "example.com:-1"),
    invalid("port above 65535", "example.com:65536"),
    invalid("port with 20 digits", "example.com:99999999999999999999"),
    invalid("port with a space", "example.com: 80"),
    invalid("two ports", "example.com:80:81"),
    invalid("bare IPv6", "::1"),
    invalid("bare IPv6 with port", "::1:8080"),
    invalid("unclosed IPv6 literal", "[::1"),
    invalid("empty IP literal", "[]"),
    invalid("IPv6 literal then garbage", "[::1]x"),
    invalid("IPv6 literal then bad port", "[::1]:x"),
    invalid("IPv6 with two compressions", "[1::2::3]"),
    invalid("IPv6 with nine groups", "[1:2:3:4:5:6:7:8:9]"),
    invalid("IPv6 with seven groups", "[1:2:3:4:5:6:7]"),
    invalid("IPv6 group of five digits", "[12345::1]"),
    invalid("IPv6 with a trailing colon", "[1:2:3:4:5:6:7:]"),
    invalid("IPv6 with a leading colon", "[:1:2:3:4:5:6:7]"),
    invalid("IPv6 with a non-hex group", "[::g]"),
    invalid("IPv6 with a zone id", "[fe80::1%25eth0]"),
    invalid("IPv6 with a bad embedded IPv4", "[::ffff:1.2.3.256]"),
    invalid("IPv6 with a short embedded IPv4", "[::ffff:1.2.3]"),
    invalid("IPv6 with a leading-zero embedded octet", "[::ffff:1.2.3.04]"),
    invalid("IPv6 with IPv4 in the middle", "[1.2.3.4::]"),
    invalid("IPv6 with too many groups before IPv4", "[1:2:3:4:5:6:7:1.2.3.4]"),
    invalid("IPvFuture without a dot", "[v1]"),
    invalid("IPvFuture without a version", "[v.a]"),
    invalid("IPvFuture with an empty address", "[v1.]"),
    invalid("IPvFuture with a slash", "[v1.a/b]"),
    invalid("two IP literals", "[::1][::1]"),
    HostSample("two Host fields", request: "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", .multipleHosts),
    HostSample("missing on HTTP/1.1", request: "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", .missingHost),
    HostSample("empty on an asterisk-form request", request: "OPTIONS * HTTP/1.1\r\nHost:\r\n\r\n", .invalidHost("")),
    HostSample("invalid on HTTP/1.0", request: "GET / HTTP/1.0\r\nHost: a b\r\n\r\n", .invalidHost("a b")),
    HostSample(
        "invalid with an absolute-form target",
        request: "GET http://example.com/ HTTP/1.1\r\nHost: a@b\r\n\r\n",
        .invalidHost("a@b")
    ),
]

let validHostSamples: [HostSample] = [
    valid("a name", "example.com"),
    valid("a one-letter name", "a"),
    valid("a name with a port", "example.com:8080"),
    valid("upper case", "EXAMPLE.COM:80"),
    valid("a trailing dot", "example.com."),
    valid("an empty port", "example.com:"),
    valid("port 0", "a:0"),
    valid("port 65535", "a:65535"),
    valid("a port with leading zeros", "a:00080"),
    valid("IPv4 with a port", "127.0.0.1:8080"),
    valid("localhost", "localhost"),
    valid("underscore and tilde", "my_host~1"),
    valid("sub-delimiters", "a!$&'()*+,;=b"),
    valid("percent-encoded", "caf%C3%A9.example"),
    valid("IPv6 loopback", "[::1]"),
    valid("IPv6 loopback with a port", "[::1]:8080"),
    valid("IPv6 unspecified", "[::]"),
    valid("IPv6 full", "[2001:db8:0:0:0:0:2:1]"),
    valid("IPv6 compressed in the middle", "[2001:db8::2:1]"),
    valid("IPv6 compressed at the end", "[2001:db8::]"),
    valid("IPv6 upper-case hex", "[2001:DB8::ABCD]"),
    valid("IPv6 with an embedded IPv4", "[::ffff:192.0.2.1]:443"),
    valid("IPv6 full with an embedded IPv4", "[1:2:3:4:5:6:1.2.3.4]"),
    valid("IPvFuture", "[v1.fe80::a+en1]"),
    HostSample("HTTP/1.0 without Host", request: "GET / HTTP/1.0\r\n\r\n", nil),
    HostSample(
        "surrounding whitespace is not part of the value",
        request: "GET / HTTP/1.1\r\nHost: \t a \t\r\n\r\n",
        nil
    ),
    HostSample("empty with an absolute-form target", request: "GET http://example.com/ HTTP/1.1\r\nHost:\r\n\r\n", nil),
    HostSample("host in any case", request: "GET / HTTP/1.1\r\nhOsT: a\r\n\r\n", nil),
]

@Suite struct HostFieldTests {
    @Test(arguments: invalidHostSamples)
    func invalidHostIsRejectedWith400(_ sample: HostSample) throws {
        let outcome = parse(sample.input)
        #expect(outcome.events.isEmpty)
        #expect(outcome.error == sample.error)
        #expect(outcome.error?.status.code == 400)
    }

    @Test(arguments: validHostSamples)
    func validHostIsAccepted(_ sample: HostSample) throws {
        let outcome = parse(sample.input)
        #expect(outcome.error == nil)
        guard case .head(let head) = outcome.events.first else {
            Issue.record("no head: \(outcome)")
            return
        }
        #expect(head.path == "/")
        #expect(outcome.events.count == 2)
    }

    @Test(arguments: invalidHostSamples + validHostSamples)
    func everySplitGivesTheSameOutcome(_ sample: HostSample) {
        let whole = parse(sample.input)
        #expect(parse(sample.input, feeding: .byteByByte) == whole)
        for index in 0...sample.input.count {
            #expect(parse(sample.input, feeding: .split(at: index)) == whole, "split at \(index)")
        }
    }

    @Test func invalidHostMessageQuotesTheValue() {
        let error = ParseError.invalidHost("a b")
        #expect(error.description == "host header must be a host name or ip literal with an optional port, got \"a b\"")
    }

    @Test func hostIsValidatedEvenWhenNotRequired() {
        let configuration = RequestParser.Configuration(requiresHost: false)
        #expect(parse("GET / HTTP/1.1\r\n\r\n".bytes, configuration: configuration).error == nil)
        #expect(
            parse("GET / HTTP/1.1\r\nHost: a b\r\n\r\n".bytes, configuration: configuration).error
                == .invalidHost("a b")
        )
    }

    @Test func everySingleByteHostIsJudgedByTheGrammar() {
        // unreserved / sub-delims are the only one-byte hosts; everything else is a 400 (or a header-value error
        // for control bytes, which the field-value check catches first).
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=".utf8)
        for byte in UInt8(0)...UInt8(255) where byte != 0x0D && byte != 0x0A && byte != 0x20 && byte != 0x09 {
            let outcome = parse("GET / HTTP/1.1\r\nHost: ".bytes + [byte] + "\r\n\r\n".bytes)
            if allowed.contains(byte) {
                #expect(outcome.error == nil, "byte \(byte)")
            } else {
                #expect(outcome.error?.status.code == 400, "byte \(byte)")
                #expect(outcome.events.isEmpty, "byte \(byte)")
            }
        }
    }
}
