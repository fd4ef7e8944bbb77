/// The HTTP/1.x request framing state machine behind ``RequestParser``: it reads the unconsumed bytes and says how
/// many it consumed and what they meant.
///
/// It never stores bytes. Every offset kept in ``State`` counts from the first byte not yet consumed (the header
/// section's from the end of the still-buffered request line), so the owner may move or compact its buffer between
/// calls as long as it hands back the same unconsumed bytes plus any new ones.
///
/// Line endings: every line (request line, field lines, chunk-size lines, the CRLF after chunk data) must end in
/// CRLF. A bare LF is rejected with ``ParseError/bareLineFeed`` everywhere; it is never tolerated, because a
/// server and a proxy that disagree on line endings can be made to disagree on framing.
///
/// **Ownership:** Owned by its ``RequestParser``.
/// **Thread safety:** Value type; not shared.
struct ParserStateMachine {
    /// Where in a request the machine is.
    enum State {
        /// Waiting for a complete request line. `scanned` bytes were already searched for LF; `skipped` bytes of
        /// empty lines before the request line were ignored (RFC 9112 §2.2) and count against the line limit.
        /// Follows: `.headerSection`, `.failed`.
        case requestLine(scanned: Int, skipped: Int)
        /// Request line validated but kept buffered (so the state holds no strings to copy); waiting for the empty
        /// line that ends the header section. `lineStart` and `scanned` count from the start of the header section;
        /// `lines` counts the complete field lines so far.
        /// Follows: `.fixedBody`, `.chunkSize`, `.failed`.
        case headerSection(RequestLineLayout, lineStart: Int, scanned: Int, lines: Int)
        /// Head delivered; `remaining` body bytes still to deliver before `.end`.
        /// Follows: `.requestLine` (after `.end`), `.failed`.
        case fixedBody(remaining: Int)
        /// Waiting for a complete chunk-size line. `received` counts the chunk bytes announced so far.
        /// Follows: `.chunkData`, `.trailers`, `.failed`.
        case chunkSize(received: Int, scanned: Int)
        /// Delivering a chunk's data; `remaining` bytes of it are still to come.
        /// Follows: `.chunkDataEnd`, `.failed`.
        case chunkData(received: Int, remaining: Int)
        /// A chunk's data was delivered; waiting for the CRLF after it.
        /// Follows: `.chunkSize`, `.failed`.
        case chunkDataEnd(received: Int)
        /// The last chunk was read; waiting for the empty line that ends the trailer section.
        /// Follows: `.requestLine` (after `.end`), `.failed`.
        case trailers(lineStart: Int, scanned: Int, lines: Int)
        /// Parsing failed; every later call throws the same error. Terminal.
        case failed(ParseError)
    }

    /// Where the parts of a validated request line sit, counting from its first byte.
    struct RequestLineLayout {
        /// Bytes of the method token.
        var methodLength: Int
        /// The request-target.
        var target: Range<Int>
        /// How the target splits; its ranges count from the target's first byte.
        var split: RequestTarget
        var version: Version
        /// Bytes of the whole line including its CRLF.
        var length: Int
    }

    /// What the owner must do after ``advance(over:)``.
    enum Action {
        /// Drop the first `consumed` bytes and report that more bytes are needed.
        case needMoreData(consumed: Int)
        /// Drop the first `consumed` bytes and report the head.
        case head(RequestHead, consumed: Int)
        /// The `count` bytes at `offset` are body bytes: report them and drop the first `offset + count` bytes.
        case body(offset: Int, count: Int)
        /// Drop the first `consumed` bytes and report the end of the request.
        case end(trailers: Headers?, consumed: Int)
    }

    /// How a field section scan ended.
    private enum SectionScan {
        /// The section, including its final empty line, is the first `length` bytes; it has `lines` field lines.
        case complete(length: Int, lines: Int)
        /// More bytes are needed; resume from these positions.
        case incomplete(lineStart: Int, scanned: Int, lines: Int)
    }

    /// How a message body is delimited.
    private enum Framing {
        case length(Int)
        case chunked
    }

    private let configuration: RequestParser.Configuration
    private var state: State = .requestLine(scanned: 0, skipped: 0)

    init(configuration: RequestParser.Configuration) {
        self.configuration = configuration
    }

    /// Whether the machine is waiting for a new request and has seen none of its request line (empty lines
    /// before it may have been skipped).
    var isAwaitingRequest: Bool {
        if case .requestLine(scanned: 0, _) = state {
            return true
        }
        return false
    }

    /// Reads as far into `buffer` (the unconsumed bytes) as the next event, and says what the bytes meant.
    ///
    /// - Throws: The ``ParseError`` that made the request unparseable; the machine then stays failed.
    mutating func advance(over buffer: UnsafeBufferPointer<UInt8>) throws(ParseError) -> Action {
        var offset = 0
        // Every pass returns, throws, or moves on: it consumes bytes, or it goes from the request line to the
        // header section, whose pass always returns. So the loop ends.
        while true {
            switch state {
            case .failed(let error):
                throw error

            case .requestLine(let scanned, let skipped):
                let available = buffer.count &- offset
                guard available > 0 else {
                    return .needMoreData(consumed: offset)
                }
                if skipped == 0 && buffer[offset] == 0x16 {
                    throw fail(.tlsHandshake)
                }
                let limit = configuration.maxRequestLineBytes
                guard let lf = ASCII.firstIndex(of: ASCII.lf, in: buffer, from: offset &+ scanned) else {
                    // The CR of a line exactly at the limit may be here while its LF is not.
                    if available > limit &- skipped &+ 1 {
                        throw fail(.requestLineTooLong(limit: limit))
                    }
                    state = .requestLine(scanned: available, skipped: skipped)
                    return .needMoreData(consumed: offset)
                }
                let lineLength = lf &- offset
                if lineLength > limit &- skipped &+ 1 {
                    throw fail(.requestLineTooLong(limit: limit))
                }
                guard lineLength > 0, buffer[lf &- 1] == ASCII.cr else {
                    throw fail(.bareLineFeed)
                }
                if lineLength == 1 {
                    state = .requestLine(scanned: 0, skipped: skipped &+ 2)
                    offset = lf &+ 1
                    continue
                }
                let layout: RequestLineLayout
                do throws(ParseError) {
                    layout = try parseRequestLine(UnsafeBufferPointer(rebasing: buffer[offset..<(lf &- 1)]))
                } catch {
                    throw fail(error)
                }
                state = .headerSection(layout, lineStart: 0, scanned: 0, lines: 0)

            case .headerSection(let layout, let lineStart, let scanned, let lines):
                let section = UnsafeBufferPointer(rebasing: buffer[(offset &+ layout.length)...])
                let scan: SectionScan
                do throws(ParseError) {
                    scan = try scanFieldSection(section, lineStart: lineStart, scanned: scanned, lines: lines)
                } catch {
                    throw fail(error)
                }
                switch scan {
                case .incomplete(let lineStart, let scanned, let lines):
                    state = .headerSection(layout, lineStart: lineStart, scanned: scanned, lines: lines)
                    return .needMoreData(consumed: offset)
                case .complete(let length, let lines):
                    let head: RequestHead
                    let framing: Framing
                    do throws(ParseError) {
                        (head, framing) = try makeHead(
                            line: UnsafeBufferPointer(rebasing: buffer[offset..<(offset &+ layout.length)]),
                            layout: layout,
                            section: UnsafeBufferPointer(rebasing: section[0..<length]),
                            lines: lines
                        )
                    } catch {
                        throw fail(error)
                    }
                    switch framing {
                    case .length(let length):
                        state = .fixedBody(remaining: length)
                    case .chunked:
                        state = .chunkSize(received: 0, scanned: 0)
                    }
                    return .head(head, consumed: offset &+ layout.length &+ length)
                }

            case .fixedBody(let remaining):
                if remaining == 0 {
                    state = .requestLine(scanned: 0, skipped: 0)
                    return .end(trailers: nil, consumed: offset)
                }
                let available = buffer.count &- offset
                guard available > 0 else {
                    return .needMoreData(consumed: offset)
                }
                let count = min(available, remaining)
                state = .fixedBody(remaining: remaining &- count)
                return .body(offset: offset, count: count)

            case .chunkSize(let received, let scanned):
                let available = buffer.count &- offset
                let limit = configuration.maxChunkLineBytes
                guard let lf = ASCII.firstIndex(of: ASCII.lf, in: buffer, from: offset &+ scanned) else {
                    if available > limit &+ 1 {
                        throw fail(.chunkLineTooLong(limit: limit))
                    }
                    state = .chunkSize(received: received, scanned: available)
                    return .needMoreData(consumed: offset)
                }
                let lineLength = lf &- offset
                if lineLength > limit &+ 1 {
                    throw fail(.chunkLineTooLong(limit: limit))
                }
                guard lineLength > 0, buffer[lf &- 1] == ASCII.cr else {
                    throw fail(.bareLineFeed)
                }
                let size: Int
                do throws(ParseError) {
                    size = try parseChunkSize(
                        UnsafeBufferPointer(rebasing: buffer[offset..<(lf &- 1)]),
                        received: received
                    )
                } catch {
                    throw fail(error)
                }
                offset = lf &+ 1
                if size == 0 {
                    state = .trailers(lineStart: 0, scanned: 0, lines: 0)
                } else {
                    state = .chunkData(received: received &+ size, remaining: size)
                }

            case .chunkData(let received, let remaining):
                let available = buffer.count &- offset
                guard available > 0 else {
                    return .needMoreData(consumed: offset)
                }
                let count = min(available, remaining)
                if count == remaining {
                    state = .chunkDataEnd(received: received)
                } else {
                    state = .chunkData(received: received, remaining: remaining &- count)
                }
                return .body(offset: offset, count: count)

            case .chunkDataEnd(let received):
                let available = buffer.count &- offset
                guard available > 0 else {
                    return .needMoreData(consumed: offset)
                }
                if buffer[offset] != ASCII.cr {
                    throw fail(buffer[offset] == ASCII.lf ? .bareLineFeed : .invalidChunkTerminator)
                }
                guard available > 1 else {
                    return .needMoreData(consumed: offset)
                }
                if buffer[offset &+ 1] != ASCII.lf {
                    throw fail(.invalidChunkTerminator)
                }
                offset &+= 2
                state = .chunkSize(received: received, scanned: 0)

            case .trailers(let lineStart, let scanned, let lines):
                let section = UnsafeBufferPointer(rebasing: buffer[offset...])
                let scan: SectionScan
                var trailers: Headers?
                do throws(ParseError) {
                    scan = try scanFieldSection(section, lineStart: lineStart, scanned: scanned, lines: lines)
                    if case .complete(let length, let lines) = scan, lines > 0 {
                        let fieldSection = UnsafeBufferPointer(rebasing: section[0..<length])
                        var fields: [Headers.Field] = []
                        fields.reserveCapacity(lines)
                        try forEachField(in: fieldSection) { name, value in
                            fields.append(Headers.Field(name: name, value: value))
                        }
                        trailers = Headers(bytes: Array(fieldSection), fields: fields)
                    }
                } catch {
                    throw fail(error)
                }
                switch scan {
                case .incomplete(let lineStart, let scanned, let lines):
                    state = .trailers(lineStart: lineStart, scanned: scanned, lines: lines)
                    return .needMoreData(consumed: offset)
                case .complete(let length, _):
                    state = .requestLine(scanned: 0, skipped: 0)
                    return .end(trailers: trailers, consumed: offset &+ length)
                }
            }
        }
    }

    /// Moves to `.failed` and returns the error to throw.
    private mutating func fail(_ error: ParseError) -> ParseError {
        state = .failed(error)
        return error
    }

    // MARK: - Request line

    /// Parses `method SP request-target SP HTTP-version` (CRLF already removed).
    private func parseRequestLine(_ line: UnsafeBufferPointer<UInt8>) throws(ParseError) -> RequestLineLayout {
        guard let firstSpace = ASCII.firstIndex(of: ASCII.space, in: line, from: 0),
            let secondSpace = ASCII.firstIndex(of: ASCII.space, in: line, from: firstSpace &+ 1)
        else {
            throw .invalidRequestLine(ParseError.quoted(line))
        }
        let methodBytes = UnsafeBufferPointer(rebasing: line[0..<firstSpace])
        guard !methodBytes.isEmpty, methodBytes.allSatisfy(ASCII.isTokenChar) else {
            throw .invalidMethod(ParseError.quoted(methodBytes))
        }
        let targetBytes = UnsafeBufferPointer(rebasing: line[(firstSpace &+ 1)..<secondSpace])
        guard !targetBytes.isEmpty else {
            throw .invalidRequestLine(ParseError.quoted(line))
        }
        let versionBytes = UnsafeBufferPointer(rebasing: line[(secondSpace &+ 1)...])
        if ASCII.equals(methodBytes, "PRI"), ASCII.equals(targetBytes, "*"), ASCII.equals(versionBytes, "HTTP/2.0") {
            throw .http2Preface
        }
        let version = try parseVersion(versionBytes)
        guard ASCII.allTargetChars(targetBytes) else {
            throw .invalidTarget(ParseError.quoted(targetBytes))
        }
        let split = RequestTarget(splitting: targetBytes)
        switch split.form {
        case .asterisk where !ASCII.equals(methodBytes, "OPTIONS"),
            .authority where !ASCII.equals(methodBytes, "CONNECT"):
            throw .invalidTarget(ParseError.quoted(targetBytes))
        default:
            break
        }
        return RequestLineLayout(
            methodLength: firstSpace,
            target: (firstSpace &+ 1)..<secondSpace,
            split: split,
            version: version,
            length: line.count &+ 2
        )
    }

    /// Parses `HTTP/D.D`, accepting any HTTP/1.x (a higher minor version is handled as 1.1, RFC 9110 §2.5).
    private func parseVersion(_ bytes: UnsafeBufferPointer<UInt8>) throws(ParseError) -> Version {
        guard bytes.count == 8, ASCII.equals(UnsafeBufferPointer(rebasing: bytes[0..<5]), "HTTP/"), bytes[6] == 0x2E,
            bytes[5] &- 0x30 < 10, bytes[7] &- 0x30 < 10
        else {
            throw .invalidVersion(ParseError.quoted(bytes))
        }
        let major = Int(bytes[5] &- 0x30)
        guard major == 1 else {
            throw .unsupportedVersion(ParseError.quoted(bytes))
        }
        return Version(major: major, minor: Int(bytes[7] &- 0x30))
    }

    // MARK: - Field sections

    /// Looks for the empty line that ends a field section (headers or trailers), enforcing the size and count limits.
    private func scanFieldSection(
        _ section: UnsafeBufferPointer<UInt8>,
        lineStart: Int,
        scanned: Int,
        lines: Int
    ) throws(ParseError) -> SectionScan {
        let maxBytes = configuration.maxHeaderBytes
        let maxCount = configuration.maxHeaderCount
        var lineStart = lineStart
        var scanned = scanned
        var lines = lines
        while true {
            guard let lf = ASCII.firstIndex(of: ASCII.lf, in: section, from: scanned) else {
                if section.count > maxBytes {
                    throw .headerTooLarge(limit: maxBytes)
                }
                return .incomplete(lineStart: lineStart, scanned: section.count, lines: lines)
            }
            if lf >= maxBytes {
                throw .headerTooLarge(limit: maxBytes)
            }
            guard lf > lineStart, section[lf &- 1] == ASCII.cr else {
                throw .bareLineFeed
            }
            if lf &- 1 == lineStart {
                return .complete(length: lf &+ 1, lines: lines)
            }
            lines &+= 1
            if lines > maxCount {
                throw .tooManyHeaders(limit: maxCount)
            }
            lineStart = lf &+ 1
            scanned = lineStart
        }
    }

    /// Validates each field line of a complete section and hands where its name and trimmed value sit to `body`.
    private func forEachField(
        in section: UnsafeBufferPointer<UInt8>,
        _ body: (Range<Int>, Range<Int>) throws(ParseError) -> Void
    ) throws(ParseError) {
        var position = 0
        while let lf = ASCII.firstIndex(of: ASCII.lf, in: section, from: position) {
            let lineEnd = lf &- 1
            if lineEnd <= position {
                return
            }
            if ASCII.isWhitespace(section[position]) {
                throw .obsoleteLineFolding
            }
            var nameEnd = position
            while nameEnd < lineEnd && ASCII.isTokenChar(section[nameEnd]) {
                nameEnd &+= 1
            }
            guard nameEnd > position, nameEnd < lineEnd, section[nameEnd] == ASCII.colon else {
                let shown = min(nameEnd &+ 1, lineEnd)
                throw .invalidHeaderName(ParseError.quoted(UnsafeBufferPointer(rebasing: section[position..<shown])))
            }
            let name = UnsafeBufferPointer(rebasing: section[position..<nameEnd])
            var valueStart = nameEnd &+ 1
            while valueStart < lineEnd && ASCII.isWhitespace(section[valueStart]) {
                valueStart &+= 1
            }
            var valueEnd = lineEnd
            while valueEnd > valueStart && ASCII.isWhitespace(section[valueEnd &- 1]) {
                valueEnd &-= 1
            }
            let value = UnsafeBufferPointer(rebasing: section[valueStart..<valueEnd])
            guard ASCII.allFieldValueChars(value) else {
                throw .invalidHeaderValue(name: ParseError.quoted(name))
            }
            try body(position..<nameEnd, valueStart..<valueEnd)
            position = lf &+ 1
        }
    }

    /// Builds the head from a validated request line and a complete header section, and decides the body framing.
    private func makeHead(
        line: UnsafeBufferPointer<UInt8>,
        layout: RequestLineLayout,
        section: UnsafeBufferPointer<UInt8>,
        lines: Int
    ) throws(ParseError) -> (RequestHead, Framing) {
        var fields: [Headers.Field] = []
        fields.reserveCapacity(lines)
        var contentLength: ContentLength?
        var transferEncoding: TransferEncoding?
        var close = false
        var keepAlive = false
        var expectsContinue = false
        var hosts = 0
        var host: Range<Int>?
        try forEachField(in: section) { nameRange, valueRange throws(ParseError) in
            fields.append(Headers.Field(name: nameRange, value: valueRange))
            let name = UnsafeBufferPointer(rebasing: section[nameRange])
            let value = UnsafeBufferPointer(rebasing: section[valueRange])
            switch name.count {
            case 4 where ASCII.caseInsensitiveEquals(name, lowercaseLiteral: "host"):
                hosts &+= 1
                host = valueRange
            case 6 where ASCII.caseInsensitiveEquals(name, lowercaseLiteral: "expect"):
                ASCII.forEachListElement(in: value) { element in
                    if ASCII.caseInsensitiveEquals(element, lowercaseLiteral: "100-continue") {
                        expectsContinue = true
                    }
                }
            case 10 where ASCII.caseInsensitiveEquals(name, lowercaseLiteral: "connection"):
                ASCII.forEachListElement(in: value) { element in
                    if ASCII.caseInsensitiveEquals(element, lowercaseLiteral: "close") {
                        close = true
                    } else if ASCII.caseInsensitiveEquals(element, lowercaseLiteral: "keep-alive") {
                        keepAlive = true
                    }
                }
            case 14 where ASCII.caseInsensitiveEquals(name, lowercaseLiteral: "content-length"):
                contentLength = try ContentLength.merging(value, into: contentLength)
            case 17 where ASCII.caseInsensitiveEquals(name, lowercaseLiteral: "transfer-encoding"):
                transferEncoding = TransferEncoding.merging(value, into: transferEncoding)
            default:
                break
            }
        }
        let headers = Headers(bytes: Array(section), fields: fields)

        let version = layout.version
        let atLeast1_1 = version.minor >= 1
        if hosts > 1 {
            throw .multipleHosts
        }
        if hosts == 0 && atLeast1_1 && configuration.requiresHost {
            throw .missingHost
        }
        if let host {
            // RFC 9112 §3.2: an empty Host is what a client sends when the target URI has no authority; only an
            // absolute-form target carries one of its own (which then wins over Host).
            let value = UnsafeBufferPointer(rebasing: section[host])
            if value.isEmpty ? layout.split.form != .absolute : !HostField.isValid(value) {
                throw .invalidHost(ParseError.quoted(value))
            }
        }

        let framing: Framing
        if let transferEncoding {
            if contentLength != nil {
                throw .contentLengthWithTransferEncoding
            }
            if !atLeast1_1 {
                throw .transferEncodingWithHTTP1_0
            }
            if case .invalid(let value) = transferEncoding {
                throw .unsupportedTransferEncoding(value)
            }
            framing = .chunked
        } else if let contentLength {
            guard case .value(let length) = contentLength, length <= configuration.maxBodyBytes else {
                throw .bodyTooLarge(limit: configuration.maxBodyBytes)
            }
            framing = .length(length)
        } else {
            framing = .length(0)
        }

        let methodBytes = UnsafeBufferPointer(rebasing: line[0..<layout.methodLength])
        let method = Method.common(methodBytes) ?? Method(rawValue: String(decoding: methodBytes, as: UTF8.self))
        let targetBytes = UnsafeBufferPointer(rebasing: line[layout.target])
        let target = String(decoding: targetBytes, as: UTF8.self)
        let split = layout.split
        let path: String
        if split.path == 0..<targetBytes.count {
            path = target
        } else if split.path.isEmpty {
            path = "/"
        } else {
            path = String(decoding: UnsafeBufferPointer(rebasing: targetBytes[split.path]), as: UTF8.self)
        }
        let query = split.query.map { String(decoding: UnsafeBufferPointer(rebasing: targetBytes[$0]), as: UTF8.self) }
        let head = RequestHead(
            method: method,
            target: target,
            path: path,
            query: query,
            version: version,
            headers: headers,
            keepAlive: !close && (atLeast1_1 || keepAlive),
            expectsContinue: atLeast1_1 && expectsContinue
        )
        return (head, framing)
    }

    // MARK: - Chunked framing

    /// Parses `chunk-size *chunk-ext` (CRLF removed) and checks the running body total.
    ///
    /// Extensions are validated against RFC 9112 §7.1.1 but not interpreted.
    private func parseChunkSize(_ line: UnsafeBufferPointer<UInt8>, received: Int) throws(ParseError) -> Int {
        var size = 0
        var overflow = false
        var index = 0
        while index < line.count, let digit = ASCII.hexValue(line[index]) {
            if !overflow {
                let (shifted, o1) = size.multipliedReportingOverflow(by: 16)
                let (sum, o2) = shifted.addingReportingOverflow(Int(digit))
                overflow = o1 || o2
                size = sum
            }
            index &+= 1
        }
        guard index > 0 else {
            throw .invalidChunkSize(ParseError.quoted(line))
        }
        if index < line.count {
            try validateChunkExtensions(line, from: index)
        }
        let limit = configuration.maxBodyBytes
        if overflow || size > limit &- received {
            throw .bodyTooLarge(limit: limit)
        }
        return size
    }
}

extension ParserStateMachine {
    /// Checks `*( BWS ";" BWS token [ BWS "=" BWS ( token / quoted-string ) ] )` from `start` to the end of `line`.
    ///
    /// Anything but whitespace and `;` right after the size is ``ParseError/invalidChunkSize(_:)``; a malformed
    /// extension is ``ParseError/invalidChunkExtension``. Whitespace at the end of the line is not allowed.
    fileprivate func validateChunkExtensions(_ line: UnsafeBufferPointer<UInt8>, from start: Int) throws(ParseError) {
        let count = line.count
        var index = start
        var sawExtension = false
        func skipWhitespace() {
            while index < count && ASCII.isWhitespace(line[index]) {
                index &+= 1
            }
        }
        func skipToken() -> Bool {
            let tokenStart = index
            while index < count && ASCII.isTokenChar(line[index]) {
                index &+= 1
            }
            return index > tokenStart
        }
        while index < count {
            skipWhitespace()
            guard index < count, line[index] == ASCII.semicolon else {
                throw sawExtension ? .invalidChunkExtension : .invalidChunkSize(ParseError.quoted(line))
            }
            sawExtension = true
            index &+= 1
            skipWhitespace()
            guard skipToken() else {
                throw .invalidChunkExtension
            }
            let afterName = index
            skipWhitespace()
            guard index < count, line[index] == ASCII.equals else {
                index = afterName
                continue
            }
            index &+= 1
            skipWhitespace()
            if index < count && line[index] == ASCII.quote {
                index &+= 1
                guard ASCII.skipQuotedStringBody(line, from: &index) else {
                    throw .invalidChunkExtension
                }
            } else if !skipToken() {
                throw .invalidChunkExtension
            }
        }
    }
}

extension ASCII {
    static let quote: UInt8 = 0x22
    static let backslash: UInt8 = 0x5C

    /// Advances `index` past the rest of a quoted-string whose opening quote was already read, including the
    /// closing quote. False when the string is unterminated or holds a byte it may not.
    static func skipQuotedStringBody(_ bytes: UnsafeBufferPointer<UInt8>, from index: inout Int) -> Bool {
        while index < bytes.count {
            let byte = bytes[index]
            if byte == quote {
                index &+= 1
                return true
            }
            if byte == backslash {
                guard index &+ 1 < bytes.count, isFieldValueChar(bytes[index &+ 1]) else { return false }
                index &+= 2
                continue
            }
            guard isFieldValueChar(byte) else { return false }
            index &+= 1
        }
        return false
    }
}

/// The merged value of every `Content-Length` field line seen so far.
///
/// Identical repeats (`5` twice, or `5, 5`) are accepted as one value (RFC 9110 §8.6); any disagreement is
/// ``ParseError/conflictingContentLength``.
///
/// **Ownership:** Local to one head parse.
/// **Thread safety:** Value type; not shared.
private enum ContentLength: Equatable {
    /// A decimal length that fits in `Int`.
    case value(Int)
    /// A decimal length too large for `Int`: always over the body limit.
    case tooLarge

    /// Merges one field line's list of lengths into `existing`.
    static func merging(_ bytes: UnsafeBufferPointer<UInt8>, into existing: ContentLength?) throws(ParseError)
        -> ContentLength
    {
        var merged = existing
        var sawElement = false
        var failure: ParseError?
        ASCII.forEachListElement(in: bytes, keepingEmpty: true) { element in
            guard failure == nil else { return }
            sawElement = true
            guard let length = parse(element) else {
                failure = .invalidContentLength(ParseError.quoted(bytes))
                return
            }
            if let merged, merged != length {
                failure = .conflictingContentLength
                return
            }
            merged = length
        }
        if let failure {
            throw failure
        }
        guard sawElement, let merged else {
            throw .invalidContentLength(ParseError.quoted(bytes))
        }
        return merged
    }

    /// Parses `1*DIGIT`; nil for anything else (signs, spaces, empty).
    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> ContentLength? {
        guard !bytes.isEmpty else { return nil }
        var value = 0
        var overflow = false
        for byte in bytes {
            let digit = byte &- 0x30
            guard digit < 10 else { return nil }
            if !overflow {
                let (shifted, o1) = value.multipliedReportingOverflow(by: 10)
                let (sum, o2) = shifted.addingReportingOverflow(Int(digit))
                overflow = o1 || o2
                value = sum
            }
        }
        return overflow ? .tooLarge : .value(value)
    }
}

/// The merged value of every `Transfer-Encoding` field line seen so far.
///
/// The only accepted coding list is a single `chunked` (any case) across all lines; anything else, including
/// `gzip, chunked`, `chunked, chunked` or an empty value, is ``ParseError/unsupportedTransferEncoding(_:)``.
///
/// **Ownership:** Local to one head parse.
/// **Thread safety:** Value type; not shared.
private enum TransferEncoding {
    /// Exactly one `chunked` so far.
    case chunked
    /// Nothing usable; carries the escaped offending field value.
    case invalid(String)

    /// Merges one field line's coding list into `existing`.
    static func merging(_ bytes: UnsafeBufferPointer<UInt8>, into existing: TransferEncoding?) -> TransferEncoding {
        if let existing, case .invalid = existing {
            return existing
        }
        var chunkedCount = existing == nil ? 0 : 1
        var valid = true
        ASCII.forEachListElement(in: bytes) { element in
            if ASCII.caseInsensitiveEquals(element, lowercaseLiteral: "chunked") {
                chunkedCount &+= 1
            } else {
                valid = false
            }
        }
        guard valid, chunkedCount == 1 else {
            return .invalid(ParseError.quoted(bytes))
        }
        return .chunked
    }
}

extension ASCII {
    /// Calls `body` with each comma-separated element of a field value, trimmed of SP and HTAB.
    /// Empty elements are skipped unless `keepingEmpty` is true.
    static func forEachListElement(
        in bytes: UnsafeBufferPointer<UInt8>,
        keepingEmpty: Bool = false,
        _ body: (UnsafeBufferPointer<UInt8>) -> Void
    ) {
        var start = 0
        while start <= bytes.count {
            let end = firstIndex(of: comma, in: bytes, from: start) ?? bytes.count
            var elementStart = start
            var elementEnd = end
            while elementStart < elementEnd && isWhitespace(bytes[elementStart]) {
                elementStart &+= 1
            }
            while elementEnd > elementStart && isWhitespace(bytes[elementEnd &- 1]) {
                elementEnd &-= 1
            }
            if keepingEmpty || elementEnd > elementStart {
                body(UnsafeBufferPointer(rebasing: bytes[elementStart..<elementEnd]))
            }
            start = end &+ 1
        }
    }
}

extension Method {
    /// The shared instance for the most frequent methods, so parsing them builds no string.
    @inline(__always)
    fileprivate static func common(_ bytes: UnsafeBufferPointer<UInt8>) -> Method? {
        switch bytes.count {
        case 3:
            if ASCII.equals(bytes, "GET") { return .get }
            if ASCII.equals(bytes, "PUT") { return .put }
        case 4:
            if ASCII.equals(bytes, "POST") { return .post }
            if ASCII.equals(bytes, "HEAD") { return .head }
        default:
            break
        }
        return nil
    }
}
