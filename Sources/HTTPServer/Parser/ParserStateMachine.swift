/// The HTTP/1.x request framing state machine behind ``RequestParser``: it reads the unconsumed bytes and says how
/// many it consumed and what they meant.
///
/// It never stores bytes. Every offset kept in ``State`` counts from the first byte not yet consumed, so the owner
/// may move or compact its buffer between calls as long as it hands back the same unconsumed bytes plus any new ones.
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
        /// Request line parsed; waiting for the empty line that ends the header section. `lineStart` is where the
        /// current, incomplete field line starts; `lines` counts the complete field lines so far.
        /// Follows: `.fixedBody`, `.chunkSize`, `.failed`.
        case headerSection(RequestLine, lineStart: Int, scanned: Int, lines: Int)
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

    /// The parts of a request line, valid once the whole line was read.
    struct RequestLine {
        var method: Method
        var target: String
        var form: RequestTarget.Form
        var path: String
        var query: String?
        var version: Version
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

    /// Whether the machine is waiting for a new request and has not seen any of it yet.
    var isAwaitingRequest: Bool {
        if case .requestLine(scanned: 0, skipped: 0) = state {
            return true
        }
        return false
    }

    /// Reads as far into `buffer` (the unconsumed bytes) as the next event, and says what the bytes meant.
    ///
    /// - Throws: The ``ParseError`` that made the request unparseable; the machine then stays failed.
    mutating func advance(over buffer: UnsafeBufferPointer<UInt8>) throws(ParseError) -> Action {
        var offset = 0
        // Every pass consumes bytes, changes state, or returns, and each state can be entered from the previous
        // one only by consuming at least one byte, so the loop ends.
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
                let line: RequestLine
                do throws(ParseError) {
                    line = try parseRequestLine(UnsafeBufferPointer(rebasing: buffer[offset..<(lf &- 1)]))
                } catch {
                    throw fail(error)
                }
                offset = lf &+ 1
                state = .headerSection(line, lineStart: 0, scanned: 0, lines: 0)

            case .headerSection(let line, let lineStart, let scanned, let lines):
                let section = UnsafeBufferPointer(rebasing: buffer[offset...])
                let scan: SectionScan
                do throws(ParseError) {
                    scan = try scanFieldSection(section, lineStart: lineStart, scanned: scanned, lines: lines)
                } catch {
                    throw fail(error)
                }
                switch scan {
                case .incomplete(let lineStart, let scanned, let lines):
                    state = .headerSection(line, lineStart: lineStart, scanned: scanned, lines: lines)
                    return .needMoreData(consumed: offset)
                case .complete(let length, let lines):
                    let head: RequestHead
                    let framing: Framing
                    do throws(ParseError) {
                        (head, framing) = try makeHead(
                            line,
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
                    return .head(head, consumed: offset &+ length)
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
                        var fields = Headers(minimumCapacity: lines)
                        try forEachField(in: UnsafeBufferPointer(rebasing: section[0..<length])) { name, value in
                            fields.add(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self))
                        }
                        trailers = fields
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
    private func parseRequestLine(_ line: UnsafeBufferPointer<UInt8>) throws(ParseError) -> RequestLine {
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
        if methodBytes.elementsEqual("PRI".utf8), targetBytes.count == 1,
            targetBytes[0] == ASCII.asterisk, versionBytes.elementsEqual("HTTP/2.0".utf8)
        {
            throw .http2Preface
        }
        let version = try parseVersion(versionBytes)
        guard targetBytes.allSatisfy(ASCII.isTargetChar) else {
            throw .invalidTarget(ParseError.quoted(targetBytes))
        }
        let method = Method(rawValue: String(decoding: methodBytes, as: UTF8.self))
        let split = RequestTarget(splitting: targetBytes)
        switch split.form {
        case .asterisk where method != .options, .authority where method != .connect:
            throw .invalidTarget(ParseError.quoted(targetBytes))
        default:
            break
        }
        let target = String(decoding: targetBytes, as: UTF8.self)
        let path: String
        if split.path == 0..<targetBytes.count {
            path = target
        } else if split.path.isEmpty {
            path = "/"
        } else {
            path = String(decoding: UnsafeBufferPointer(rebasing: targetBytes[split.path]), as: UTF8.self)
        }
        let query = split.query.map { String(decoding: UnsafeBufferPointer(rebasing: targetBytes[$0]), as: UTF8.self) }
        return RequestLine(method: method, target: target, form: split.form, path: path, query: query, version: version)
    }

    /// Parses `HTTP/D.D`, accepting any HTTP/1.x (a higher minor version is handled as 1.1, RFC 9110 §2.5).
    private func parseVersion(_ bytes: UnsafeBufferPointer<UInt8>) throws(ParseError) -> Version {
        guard bytes.count == 8, bytes[0..<5].elementsEqual("HTTP/".utf8), bytes[6] == 0x2E,
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

    /// Validates each field line of a complete section and hands its name and trimmed value to `body`.
    private func forEachField(
        in section: UnsafeBufferPointer<UInt8>,
        _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) throws(ParseError) -> Void
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
            for index in valueStart..<valueEnd where !ASCII.isFieldValueChar(section[index]) {
                throw .invalidHeaderValue(name: ParseError.quoted(name))
            }
            try body(name, UnsafeBufferPointer(rebasing: section[valueStart..<valueEnd]))
            position = lf &+ 1
        }
    }

    /// Builds the head from a parsed request line and a complete header section, and decides the body framing.
    private func makeHead(
        _ line: RequestLine,
        section: UnsafeBufferPointer<UInt8>,
        lines: Int
    ) throws(ParseError) -> (RequestHead, Framing) {
        var headers = Headers(minimumCapacity: lines)
        var contentLength: ContentLength?
        var transferEncoding: TransferEncoding?
        var close = false
        var keepAlive = false
        var expectsContinue = false
        var hosts = 0
        try forEachField(in: section) { name, value throws(ParseError) in
            switch name.count {
            case 4 where ASCII.caseInsensitiveEquals(name, lowercaseLiteral: "host"):
                hosts &+= 1
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
            headers.add(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self))
        }

        let version = line.version
        let atLeast1_1 = version.minor >= 1
        if hosts > 1 {
            throw .multipleHosts
        }
        if hosts == 0 && atLeast1_1 && configuration.requiresHost {
            throw .missingHost
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

        let head = RequestHead(
            method: line.method,
            target: line.target,
            path: line.path,
            query: line.query,
            version: version,
            headers: headers,
            keepAlive: !close && (atLeast1_1 || keepAlive),
            expectsContinue: atLeast1_1 && expectsContinue
        )
        return (head, framing)
    }

    // MARK: - Chunked framing

    /// Parses `chunk-size [ BWS ";" chunk-ext ]` (CRLF removed) and checks the running body total.
    ///
    /// Extensions are not interpreted; they only have to be free of control bytes other than HTAB.
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
        var rest = index
        while rest < line.count && ASCII.isWhitespace(line[rest]) {
            rest &+= 1
        }
        if rest < line.count {
            guard line[rest] == ASCII.semicolon else {
                throw .invalidChunkSize(ParseError.quoted(line))
            }
            for position in (rest &+ 1)..<line.count where !ASCII.isFieldValueChar(line[position]) {
                throw .invalidChunkExtension
            }
        }
        let limit = configuration.maxBodyBytes
        if overflow || size > limit &- received {
            throw .bodyTooLarge(limit: limit)
        }
        return size
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
    static func merging(_ bytes: UnsafeBufferPointer<UInt8>, into existing: ContentLength?) throws(ParseError) -> ContentLength {
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
