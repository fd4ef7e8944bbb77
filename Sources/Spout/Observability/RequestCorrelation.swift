import Synchronization

/// The identifiers that tie one request to its log line, to the client, and to the upstream calls it makes:
/// the request ID (`X-Request-ID`) and the W3C Trace Context (`traceparent`, `tracestate`).
///
/// - **Request ID.** A client's `X-Request-ID` is kept when it is 1 to ``maxRequestIDLength`` characters of
///   `A–Z a–z 0–9 - _ . : + = / @ ~`; anything else (too long, spaces, control bytes, quotes) is replaced by a
///   generated one, so what Spout echoes and logs is always safe to print. Generated IDs are 15 characters
///   of base 32 (75 bits): the first 64 bits are a keyed bijection of a per-process counter, so no two
///   requests of a process share one, and the per-process random key makes them differ between processes.
///   Fifteen characters fit a Swift small string, so an ID costs no allocation.
/// - **Trace context.** A valid `traceparent` (W3C Trace Context, version `00` and later versions read as
///   `00`) is continued: its trace ID is kept and logged, its flags are kept, and Spout's own span gets a new
///   span ID, which upstream calls receive as their parent. `tracestate` is kept when it is well formed and
///   at most 512 characters (else dropped, as the specification allows) and only with a valid `traceparent`.
///   With no valid `traceparent` Spout **starts a trace**: a new trace ID, not sampled (flags `00`, Spout
///   records no spans itself), so the request log and the upstream's logs still share a trace ID. Starting
///   one costs a counter tick and two multiplications, nothing is formatted until it is written.
///
/// **Thread safety:** value type; not shared. The generator behind it is safe from any thread.
struct RequestCorrelation: Sendable, Equatable {
    /// The request ID echoed in `X-Request-ID` and logged as `request_id`.
    let requestID: String
    /// The trace ID (128 bits, never zero).
    let traceID: (high: UInt64, low: UInt64)
    /// Spout's span for this request (never zero): the parent ID of its upstream calls.
    let spanID: UInt64
    /// The span that called Spout, from `traceparent`; `nil` when Spout started the trace.
    let parentSpanID: UInt64?
    /// The trace flags (bit 0: sampled).
    let traceFlags: UInt8
    /// The incoming `tracestate`, when valid.
    let traceState: String?

    /// The longest `X-Request-ID` kept.
    static let maxRequestIDLength = 128
    /// The longest `tracestate` kept (the specification's minimum to propagate).
    static let maxTraceStateLength = 512

    static func == (lhs: RequestCorrelation, rhs: RequestCorrelation) -> Bool {
        lhs.requestID == rhs.requestID && lhs.traceID == rhs.traceID && lhs.spanID == rhs.spanID
            && lhs.parentSpanID == rhs.parentSpanID && lhs.traceFlags == rhs.traceFlags
            && lhs.traceState == rhs.traceState
    }

    /// Reads the identifiers from a request's `X-Request-ID`, `traceparent` and `tracestate` (any of them may be
    /// `nil`), generating what is missing or invalid.
    init(requestID incomingID: String?, traceparent: String?, tracestate: String?) {
        let fresh = CorrelationIDs.next()
        if let incomingID, Self.isValidRequestID(incomingID) {
            requestID = incomingID
        } else {
            requestID = fresh.requestID
        }
        spanID = fresh.spanID
        if let traceparent, let parent = TraceParent(traceparent) {
            traceID = parent.traceID
            parentSpanID = parent.parentID
            traceFlags = parent.flags
            traceState = tracestate.flatMap(Self.validTraceState)
        } else {
            traceID = fresh.traceID
            parentSpanID = nil
            traceFlags = 0
            traceState = nil
        }
    }

    /// Whether Spout started this trace (no valid `traceparent` came in).
    var startedTrace: Bool { parentSpanID == nil }

    /// The trace ID as 32 lowercase hex digits.
    var traceIDText: String {
        var bytes: [UInt8] = []
        appendTraceID(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The `traceparent` for an upstream call: this trace, Spout's span as the parent, the same flags.
    var outgoingTraceparent: String {
        var bytes = Array("00-".utf8)
        appendTraceID(to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        Hex.append(spanID, digits: 16, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        Hex.append(UInt64(traceFlags), digits: 2, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The headers every upstream call of this request carries: `X-Request-ID`, `traceparent` and, when one
    /// came in, `tracestate`. This is the one place the upstream client takes them from.
    var correlationHeaders: [String: String] {
        var headers = ["X-Request-ID": requestID, "traceparent": outgoingTraceparent]
        if let traceState { headers["tracestate"] = traceState }
        return headers
    }

    /// Appends the trace ID's 32 hex digits (for the log line, without building a string).
    func appendTraceID(to bytes: inout [UInt8]) {
        Hex.append128(traceID.high, traceID.low, to: &bytes)
    }

    /// Whether `text` is kept as a request ID: 1…128 characters, each a letter, digit or one of `-_.:+=/@~`.
    static func isValidRequestID(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= maxRequestIDLength else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "+"),
                UInt8(ascii: "="), UInt8(ascii: "/"), UInt8(ascii: "@"), UInt8(ascii: "~"):
                true
            default: false
            }
        }
    }

    /// `text` if it is a well-formed `tracestate` (W3C Trace Context §3.3) of at most 512 characters and 32
    /// members, else `nil`. Empty members (`a=1,,b=2`) are allowed, as the specification says.
    static func validTraceState(_ text: String) -> String? {
        let utf8 = Array(text.utf8)
        guard !utf8.isEmpty, utf8.count <= maxTraceStateLength else { return nil }
        var members = 0
        var keys: [ArraySlice<UInt8>] = []
        for rawMember in utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            var member = rawMember
            while let first = member.first, first == 0x20 || first == 0x09 { member.removeFirst() }
            while let last = member.last, last == 0x20 || last == 0x09 { member.removeLast() }
            if member.isEmpty { continue }
            members += 1
            guard members <= 32, let equals = member.firstIndex(of: UInt8(ascii: "=")) else { return nil }
            let key = member[member.startIndex..<equals]
            let value = member[(equals + 1)...]
            guard isValidTraceStateKey(key), isValidTraceStateValue(value), !keys.contains(key) else { return nil }
            keys.append(key)
        }
        return members > 0 ? text : nil
    }

    /// `key = simple-key / multi-tenant-key`: `[a-z][a-z0-9_\-*/]{0,255}`, or `tenant@system` with a tenant of
    /// `[a-z0-9][a-z0-9_\-*/]{0,240}` and a system of `[a-z][a-z0-9_\-*/]{0,13}`.
    private static func isValidTraceStateKey(_ key: ArraySlice<UInt8>) -> Bool {
        func isKeyCharacter(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"),
                UInt8(ascii: "-"), UInt8(ascii: "*"), UInt8(ascii: "/"):
                true
            default: false
            }
        }
        func isLower(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) }
        func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        if let at = key.firstIndex(of: UInt8(ascii: "@")) {
            let tenant = key[key.startIndex..<at]
            let system = key[(at + 1)...]
            guard let tenantFirst = tenant.first, isLower(tenantFirst) || isDigit(tenantFirst), tenant.count <= 241,
                tenant.allSatisfy(isKeyCharacter), let systemFirst = system.first, isLower(systemFirst),
                system.count <= 14, system.allSatisfy(isKeyCharacter)
            else { return false }
            return true
        }
        guard let first = key.first, isLower(first), key.count <= 256 else { return false }
        return key.allSatisfy(isKeyCharacter)
    }

    /// `value = 0*255(chr) nblk-chr` with `chr = %x20 / nblk-chr` and `nblk-chr = %x21-2B / %x2D-3C / %x3E-7E`.
    private static func isValidTraceStateValue(_ value: ArraySlice<UInt8>) -> Bool {
        guard let last = value.last, last != 0x20, value.count <= 256 else { return false }
        return value.allSatisfy { byte in
            (0x20...0x7E).contains(byte) && byte != UInt8(ascii: ",") && byte != UInt8(ascii: "=")
        }
    }
}
