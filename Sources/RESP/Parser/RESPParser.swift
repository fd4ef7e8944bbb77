/// An incremental RESP2/RESP3 reader: append the bytes read from a Redis connection, then pull complete values.
///
/// It knows nothing of sockets or clocks. Feed bytes with ``append(_:)-(UnsafeRawBufferPointer)`` in whatever
/// pieces they arrive and call ``next()`` until it returns nil. Each call returns one complete top-level value: a
/// reply, or a push. Aggregates are built without recursion — an explicit stack of the aggregates being filled — so
/// a hostile server cannot exhaust the thread's stack, and every length and count is checked against
/// ``Configuration`` before anything is allocated for it. After an error the parser stays failed: every later
/// ``next()`` throws the same error, and the connection must be closed.
///
/// Elements are consumed as soon as they are complete, so a large aggregate arriving in many reads is parsed once,
/// and a line or bulk string that is still incomplete is not searched again from its start.
///
/// **Ownership:** Owned by one connection (through ``RESPConnectionStateMachine``) for its lifetime.
/// **Thread safety:** Value type; not shared.
public struct RESPParser: Sendable {
    /// Limits the parser enforces. Each is documented with its default; a negative limit counts as zero.
    ///
    /// **Ownership:** A value; copied into the parser.
    /// **Thread safety:** Value type; not shared.
    public struct Configuration: Sendable, Equatable {
        /// Largest bulk string, bulk error or verbatim string, in bytes. Default 64 MiB (67108864); Redis itself
        /// allows 512 MiB (`proto-max-bulk-len`). Exceeding it is ``RESPParseError/bulkTooLong(length:limit:)``,
        /// raised as soon as the length is read.
        public var maxBulkBytes: Int
        /// Most elements in one aggregate, counting pairs for a map or attribute. Default 1,048,576. Exceeding it
        /// is ``RESPParseError/aggregateTooLarge(count:limit:)``, raised as soon as the count is read.
        public var maxAggregateCount: Int
        /// Deepest nesting of aggregates (an attribute and the value it describes count as one level). Default 32;
        /// at most 256, because comparing, printing and releasing a value recurse once per level. Exceeding it is
        /// ``RESPParseError/nestingTooDeep(limit:)``.
        public var maxDepth: Int
        /// Longest line — a simple string, error, number, or the header of a bulk or aggregate — in bytes, its type
        /// byte included and its CRLF not. Default 65536. Exceeding it is ``RESPParseError/lineTooLong(limit:)``.
        public var maxLineBytes: Int
        /// Most bytes one value may hold before it is complete: the wire bytes it has consumed plus
        /// `MemoryLayout<RESPValue>.stride` for each element already parsed into it (so a flood of tiny elements
        /// is charged for the memory it takes), plus the bytes still buffered for it. Default 128 MiB (134217728).
        /// Exceeding it is ``RESPParseError/valueTooLarge(limit:)``. Keep it above ``maxBulkBytes``.
        public var maxBufferedBytes: Int

        /// Creates a configuration; every argument defaults to the value documented on its property.
        public init(
            maxBulkBytes: Int = 64 << 20,
            maxAggregateCount: Int = 1 << 20,
            maxDepth: Int = 32,
            maxLineBytes: Int = 64 << 10,
            maxBufferedBytes: Int = 128 << 20
        ) {
            self.maxBulkBytes = max(0, maxBulkBytes)
            self.maxAggregateCount = max(0, maxAggregateCount)
            self.maxDepth = min(256, max(0, maxDepth))
            self.maxLineBytes = max(0, maxLineBytes)
            self.maxBufferedBytes = max(0, maxBufferedBytes)
        }
    }

    /// The limits this parser enforces.
    public let configuration: Configuration

    /// Received bytes; those before `readIndex` are consumed.
    private var storage: [UInt8] = []
    private var readIndex = 0
    /// How many unconsumed bytes were already searched for the LF that ends the current line.
    private var scanned = 0
    /// The aggregates being filled, outermost first.
    private var stack: [Frame] = []
    /// The bulk whose header is consumed and whose bytes have not all arrived.
    private var pendingBulk: PendingBulk?
    /// What the value in progress is charged against ``Configuration/maxBufferedBytes``, buffered bytes aside.
    private var heldBytes = 0
    /// Set by the first error; every later ``next()`` throws it.
    private var failure: RESPParseError?

    /// Creates a parser waiting for the first value.
    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// Bytes appended but not yet consumed.
    public var bufferedByteCount: Int { storage.count &- readIndex }

    /// Whether nothing is buffered and no value is in progress.
    public var isIdle: Bool { bufferedByteCount == 0 && stack.isEmpty && pendingBulk == nil }

    /// Appends bytes read from the connection.
    ///
    /// - Complexity: Amortized O(n) in `bytes.count`; the buffer is compacted only once the consumed prefix is at
    ///   least half of it.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty, failure == nil else { return }
        compact()
        storage.append(contentsOf: bytes)
    }

    /// Appends bytes read from the connection.
    ///
    /// - Complexity: Amortized O(n) in `bytes.count`.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        guard !bytes.isEmpty, failure == nil else { return }
        compact()
        storage.append(contentsOf: bytes)
    }

    /// Parses as far as the next complete top-level value.
    ///
    /// - Returns: The value, or nil when the buffered bytes end inside one; append more and call again.
    /// - Throws: The ``RESPParseError`` that makes the stream unreadable; every later call throws it again.
    public mutating func next() throws(RESPParseError) -> RESPValue? {
        if let failure {
            throw failure
        }
        do throws(RESPParseError) {
            while true {
                switch try step() {
                case .needMoreData:
                    return nil
                case .progress:
                    continue
                case .value(let value):
                    return value
                }
            }
        } catch {
            failure = error
            storage = []
            readIndex = 0
            stack = []
            pendingBulk = nil
            throw error
        }
    }

    // MARK: - Steps

    private enum Step {
        case needMoreData
        /// A header was consumed (an aggregate opened, a bulk's length read) or an element filed; go on.
        case progress
        case value(RESPValue)
    }

    /// One element at the read position: a scalar, a bulk, or an aggregate's header.
    private mutating func step() throws(RESPParseError) -> Step {
        let bytes = storage
        let start = readIndex
        let element: RESPValue? = try bytes.withUnsafeBufferPointer { buffer throws(RESPParseError) in
            let unread = UnsafeBufferPointer(rebasing: buffer[start...])
            if let bulk = pendingBulk {
                return try bulkBody(bulk, in: unread)
            }
            return try header(in: unread)
        }
        guard let element else {
            if readIndex == start {
                try checkHeld(plus: bufferedByteCount)
                return .needMoreData
            }
            return .progress
        }
        return try file(element)
    }

    /// Reads the line at the start of `unread` and either returns its scalar, or consumes an aggregate or bulk
    /// header (returning nil with `readIndex` moved), or returns nil with nothing consumed when the line is
    /// incomplete.
    private mutating func header(in unread: UnsafeBufferPointer<UInt8>) throws(RESPParseError) -> RESPValue? {
        guard let end = try lineEnd(in: unread) else { return nil }
        let type = unread[0]
        let text = UnsafeBufferPointer(rebasing: unread[1..<(end &- 1)])
        let lineBytes = end &+ 1
        let value: RESPValue
        switch type {
        case UInt8(ascii: "+"):
            value = .simpleString(String(decoding: text, as: UTF8.self))
        case UInt8(ascii: "-"):
            value = .error(String(decoding: text, as: UTF8.self))
        case UInt8(ascii: ":"):
            guard let integer = RESPNumbers.integer(text) else { throw .invalidInteger(RESPText.quoted(text)) }
            value = .integer(integer)
        case UInt8(ascii: "_"):
            guard text.isEmpty else { throw .invalidNull(RESPText.quoted(text)) }
            value = .null
        case UInt8(ascii: "#"):
            guard text.count == 1, text[0] == UInt8(ascii: "t") || text[0] == UInt8(ascii: "f") else {
                throw .invalidBoolean(RESPText.quoted(text))
            }
            value = .boolean(text[0] == UInt8(ascii: "t"))
        case UInt8(ascii: ","):
            guard let double = RESPNumbers.double(text) else { throw .invalidDouble(RESPText.quoted(text)) }
            value = .double(double)
        case UInt8(ascii: "("):
            guard RESPNumbers.isBigNumber(text) else { throw .invalidBigNumber(RESPText.quoted(text)) }
            value = .bigNumber(String(decoding: text, as: UTF8.self))
        case UInt8(ascii: "$"), UInt8(ascii: "!"), UInt8(ascii: "="):
            guard let length = RESPNumbers.length(text) else { throw .invalidLength(RESPText.quoted(text)) }
            if length < 0 {
                guard type == UInt8(ascii: "$") else { throw .invalidLength(RESPText.quoted(text)) }
                value = .bulkString(nil)
                break
            }
            guard length <= configuration.maxBulkBytes else {
                throw .bulkTooLong(length: length, limit: configuration.maxBulkBytes)
            }
            // The whole bulk must fit before its bytes are awaited, so a large one fails at once.
            let (withData, overflow) = length.addingReportingOverflow(lineBytes &+ 2)
            guard !overflow else { throw .valueTooLarge(limit: configuration.maxBufferedBytes) }
            try checkHeld(plus: withData)
            consume(lineBytes)
            pendingBulk = PendingBulk(type: type, length: length)
            return nil
        case UInt8(ascii: "*"), UInt8(ascii: "~"), UInt8(ascii: ">"), UInt8(ascii: "%"), UInt8(ascii: "|"):
            guard let count = RESPNumbers.length(text) else { throw .invalidLength(RESPText.quoted(text)) }
            if count < 0 {
                guard type == UInt8(ascii: "*") else { throw .invalidLength(RESPText.quoted(text)) }
                value = .array(nil)
                break
            }
            guard count <= configuration.maxAggregateCount else {
                throw .aggregateTooLarge(count: count, limit: configuration.maxAggregateCount)
            }
            guard stack.count < configuration.maxDepth else {
                throw .nestingTooDeep(limit: configuration.maxDepth)
            }
            let kind = Frame.Kind(type)
            let isPaired = type == UInt8(ascii: "%") || type == UInt8(ascii: "|")
            let (elements, overflow) = count.multipliedReportingOverflow(by: isPaired ? 2 : 1)
            guard !overflow else { throw .aggregateTooLarge(count: count, limit: configuration.maxAggregateCount) }
            consume(lineBytes)
            try checkHeld(plus: 0)
            if elements > 0 {
                stack.append(Frame(kind: kind, remaining: elements, capacity: elements))
                return nil
            }
            switch kind {
            case .attribute:
                stack.append(Frame(kind: .attributed([]), remaining: 1, capacity: 1))
                return nil
            case .array, .set, .push, .map, .attributed:
                return Frame(kind: kind, remaining: 0, capacity: 0).value
            }
        default:
            throw .unknownType(type)
        }
        consume(lineBytes)
        return value
    }

    /// The bulk's bytes and CRLF, once all of them are buffered; nil before.
    private mutating func bulkBody(_ bulk: PendingBulk, in unread: UnsafeBufferPointer<UInt8>) throws(RESPParseError)
        -> RESPValue?
    {
        let length = bulk.length
        guard unread.count &- length >= 2 else { return nil }
        guard unread[length] == RESPWire.cr, unread[length &+ 1] == RESPWire.lf else { throw .invalidBulkTerminator }
        let data = UnsafeBufferPointer(rebasing: unread[0..<length])
        let value: RESPValue
        switch bulk.type {
        case UInt8(ascii: "$"):
            value = .bulkString(Array(data))
        case UInt8(ascii: "!"):
            value = .bulkError(String(decoding: data, as: UTF8.self))
        default:
            // The format is three printable ASCII bytes ("txt", "mkd"): kept as a String, anything else would not
            // survive the round trip (an invalid UTF-8 byte becomes a three-byte replacement character).
            guard length >= 4, data[3] == UInt8(ascii: ":"), data[0..<3].allSatisfy({ (0x21...0x7E).contains($0) })
            else {
                throw .invalidVerbatimString(RESPText.quoted(data))
            }
            value = .verbatimString(
                format: String(decoding: UnsafeBufferPointer(rebasing: data[0..<3]), as: UTF8.self),
                text: Array(data[4...])
            )
        }
        pendingBulk = nil
        consume(length &+ 2)
        return value
    }

    /// Files a complete element into the aggregate being filled, closing every aggregate it completes.
    private mutating func file(_ element: RESPValue) throws(RESPParseError) -> Step {
        var value = element
        while !stack.isEmpty {
            let top = stack.count &- 1
            stack[top].elements.append(value)
            stack[top].remaining &-= 1
            heldBytes &+= MemoryLayout<RESPValue>.stride
            try checkHeld(plus: 0)
            guard stack[top].remaining == 0 else { return .progress }
            let frame = stack.removeLast()
            if case .attribute = frame.kind {
                stack.append(Frame(kind: .attributed(Frame.pairs(frame.elements)), remaining: 1, capacity: 1))
                return .progress
            }
            value = frame.value
        }
        heldBytes = 0
        return .value(value)
    }

    // MARK: - Lines and bookkeeping

    /// The index of the LF ending the line at the start of `unread`, or nil while it has not arrived.
    private mutating func lineEnd(in unread: UnsafeBufferPointer<UInt8>) throws(RESPParseError) -> Int? {
        var index = scanned
        let count = unread.count
        while index < count && unread[index] != RESPWire.lf {
            index &+= 1
        }
        guard index < count else {
            scanned = count
            try checkLine(seen: count)
            return nil
        }
        // The limits first, judged as they would have been had the line arrived without its LF.
        try checkLine(seen: index)
        guard index > 0, unread[index &- 1] == RESPWire.cr else { throw .bareLineFeed }
        let length = index &- 1
        var inner = 0
        while inner < length {
            if unread[inner] == RESPWire.cr {
                throw .bareCarriageReturn
            }
            inner &+= 1
        }
        if length == 0 {
            throw .unknownType(RESPWire.cr)
        }
        return index
    }

    /// Throws when `seen` bytes of a line without its LF pass a limit: the line limit (everything but a final CR,
    /// which may be the line's own, counts) or the buffer limit.
    ///
    /// Both only grow with `seen`, so the error must be the limit passed at the *smaller* `seen` (the line limit on
    /// a tie), whatever the number of bytes that happen to be buffered: otherwise one input split in two places
    /// would fail in two ways.
    private func checkLine(seen: Int) throws(RESPParseError) {
        // `heldBytes` never passes the limit between values, so `room` is not negative.
        let room = configuration.maxBufferedBytes &- heldBytes
        let overLine = seen &- 1 > configuration.maxLineBytes
        let overBuffer = seen > room
        guard overLine || overBuffer else { return }
        // Past the line limit, `maxLineBytes + 1 < seen`, so the sum cannot overflow.
        if overLine && (!overBuffer || configuration.maxLineBytes &+ 1 <= room) {
            throw .lineTooLong(limit: configuration.maxLineBytes)
        }
        throw .valueTooLarge(limit: configuration.maxBufferedBytes)
    }

    private mutating func consume(_ count: Int) {
        readIndex &+= count
        scanned = 0
        heldBytes &+= count
    }

    /// Throws when the value in progress, with `extra` more bytes, would pass ``Configuration/maxBufferedBytes``.
    private func checkHeld(plus extra: Int) throws(RESPParseError) {
        let (total, overflow) = heldBytes.addingReportingOverflow(extra)
        if overflow || total > configuration.maxBufferedBytes {
            throw .valueTooLarge(limit: configuration.maxBufferedBytes)
        }
    }

    /// Drops the consumed prefix when that is cheap or worth it.
    private mutating func compact() {
        guard readIndex > 0 else { return }
        if readIndex == storage.count {
            storage.removeAll(keepingCapacity: true)
            readIndex = 0
        } else if readIndex >= storage.count &>> 1 {
            storage.removeSubrange(0..<readIndex)
            readIndex = 0
        }
    }
}

extension RESPParser {
    /// A bulk whose length line is consumed.
    private struct PendingBulk: Sendable {
        /// `$`, `!` or `=`.
        var type: UInt8
        var length: Int
    }

    /// An aggregate being filled.
    private struct Frame: Sendable {
        enum Kind: Sendable {
            case array
            case set
            case push
            case map
            /// The attribute's own pairs are being read.
            case attribute
            /// The attribute is read; the one element is the value it describes.
            case attributed([RESPValue.Pair])

            init(_ type: UInt8) {
                switch type {
                case UInt8(ascii: "~"): self = .set
                case UInt8(ascii: ">"): self = .push
                case UInt8(ascii: "%"): self = .map
                case UInt8(ascii: "|"): self = .attribute
                default: self = .array
                }
            }
        }

        var kind: Kind
        /// Elements still to come (two per pair).
        var remaining: Int
        var elements: [RESPValue] = []

        init(kind: Kind, remaining: Int, capacity: Int) {
            self.kind = kind
            self.remaining = remaining
            // A declared count is a claim, not a fact: reserve little and let the array grow with what arrives.
            elements.reserveCapacity(min(capacity, 16))
        }

        /// The complete aggregate; not for `.attribute`, which becomes `.attributed` instead.
        var value: RESPValue {
            switch kind {
            case .array: return .array(elements)
            case .set: return .set(elements)
            case .push: return .push(elements)
            case .map, .attribute: return .map(Frame.pairs(elements))
            case .attributed(let pairs): return .attribute(pairs, elements[0])
            }
        }

        static func pairs(_ elements: [RESPValue]) -> [RESPValue.Pair] {
            var pairs: [RESPValue.Pair] = []
            pairs.reserveCapacity(elements.count &>> 1)
            var index = 0
            while index &+ 1 < elements.count {
                pairs.append(RESPValue.Pair(elements[index], elements[index &+ 1]))
                index &+= 2
            }
            return pairs
        }
    }
}
