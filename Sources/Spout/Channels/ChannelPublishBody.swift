/// The body of `POST /channels/{name}/events`: `{"data": <any JSON>, "event": "<type>"}`, or a non-empty array
/// of such objects, read strictly by ``StrictJSONReader`` in one pass that also copies each `data` out as compact
/// JSON text.
///
/// Strict means: valid UTF-8 (with no byte order mark), RFC 8259 and nothing more (no trailing commas or comments,
/// no member twice in any object, no lone surrogates), no members other than `data` and `event`, and a `data`
/// nesting at most ``maxDepth`` arrays and objects (so no input can exhaust the stack). Every refusal is a
/// ``Problem`` that says where and what.
///
/// **Thread safety:** value type; not shared.
struct ChannelPublishBody {
    /// The events, in the order given.
    let publications: [ChannelPublication]

    /// Arrays and objects nested in a `data` deeper than this are refused.
    static let maxDepth = StrictJSONReader.maxDepth
    /// The longest `event` type, in characters (Unicode scalars, as JSON Schema's `maxLength` counts).
    static let maxTypeCharacters = 128
    /// Event types the stream itself uses (`reset`, `gap`, `end`, and `error` as the sequence streams do): a
    /// publisher may not send them, so a client can trust what they say.
    static let reservedTypes: Set<String> = ["reset", "gap", "end", "error"]

    /// Whether `scalar` is a control character (Unicode general category Cc): C0 (U+0000–U+001F), DEL (U+007F)
    /// and C1 (U+0080–U+009F, NEL included), none of which an event type may hold.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// Reads `body`; each `data` may be at most `maxDataBytes` of compact JSON (`413` beyond).
    init(_ body: [UInt8], maxDataBytes: Int) throws(Problem) {
        guard String(validating: body, as: UTF8.self) != nil else {
            throw .invalidBody("the body is not valid UTF-8")
        }
        guard !body.starts(with: [0xEF, 0xBB, 0xBF]) else {
            throw .invalidBody("the body starts with a byte order mark; send the JSON alone")
        }
        publications = try body.withUnsafeBufferPointer { bytes throws(Problem) in
            try Self.publications(bytes, maxDataBytes: maxDataBytes)
        }
    }

    /// The events of `body`: one object, or an array of them.
    private static func publications(_ body: UnsafeBufferPointer<UInt8>, maxDataBytes: Int) throws(Problem)
        -> [ChannelPublication]
    {
        var reader = StrictJSONReader(body)
        var publications: [ChannelPublication] = []
        switch reader.peek() {
        case .object:
            publications.append(try publication(&reader, depth: 0, maxDataBytes: maxDataBytes, item: nil))
        case .array:
            try reader.elements(depth: 0, syntax: invalid) { (reader: inout StrictJSONReader) throws(Problem) in
                guard reader.peek() == .object else {
                    throw .invalidBody("item \(publications.count) of the array is not an object {\"data\": …}")
                }
                publications.append(
                    try publication(&reader, depth: 1, maxDataBytes: maxDataBytes, item: publications.count)
                )
            }
            guard !publications.isEmpty else {
                throw .invalidBody("the array is empty; send at least one {\"data\": …} object")
            }
        default:
            guard (try? reader.end()) == nil else { throw .invalidBody("the body is empty; send {\"data\": <JSON>}") }
            throw .invalidBody("the body must be an object {\"data\": <JSON>} or an array of them")
        }
        do throws(StrictJSONReader.SyntaxError) { try reader.end() } catch { throw invalid(error) }
        return publications
    }

    /// A body that is not JSON: what is wrong, and at which byte.
    private static func invalid(_ error: StrictJSONReader.SyntaxError) -> Problem {
        .invalidBody("the body is not JSON: \(error.reason) at offset \(error.offset)")
    }

    /// The `{"data": …, "event": …}` object at `reader`'s cursor, at `depth`; `item` is its index in an array, if
    /// in one.
    private static func publication(
        _ reader: inout StrictJSONReader,
        depth: Int,
        maxDataBytes: Int,
        item: Int?
    ) throws(Problem) -> ChannelPublication {
        let place = item.map { " in item \($0)" } ?? ""
        var data: [UInt8]?
        var type: String?
        let syntax = { (error: StrictJSONReader.SyntaxError) -> Problem in
            guard case .duplicate(let name) = error.kind else { return invalid(error) }
            return .invalidBody("\"\(name)\" is given twice\(place)")  // data or event: any other name is unknown
        }
        try reader.members(depth: depth, syntax: syntax) {
            (reader: inout StrictJSONReader, name: StrictJSONReader.Name) throws(Problem) in
            if reader.name(name, is: "data") {
                let compact: [UInt8]
                do throws(StrictJSONReader.SyntaxError) {
                    compact = try reader.copyCompact(depth: 0)
                } catch {
                    guard error.kind == .tooDeep else { throw invalid(error) }
                    throw .invalidBody("the data\(place) nests deeper than \(maxDepth) levels")
                }
                guard compact.count <= maxDataBytes else {
                    throw .contentTooLarge(
                        "the data\(place) is \(compact.count) bytes of compact JSON; at most \(maxDataBytes) "
                            + "(channels.maxEventBytes)"
                    )
                }
                data = compact
            } else if reader.name(name, is: "event") {
                guard reader.peek() == .string else {
                    throw .invalidBody("\"event\"\(place) must be a string (the SSE event type)")
                }
                let text: String
                do throws(StrictJSONReader.SyntaxError) { text = try reader.string() } catch { throw invalid(error) }
                guard !text.isEmpty, text.unicodeScalars.count <= maxTypeCharacters,
                    !text.unicodeScalars.contains(where: isControl)
                else {
                    throw .invalidBody(
                        "\"event\"\(place) must be 1–\(maxTypeCharacters) characters without control characters"
                    )
                }
                guard !reservedTypes.contains(text) else {
                    throw .invalidBody(
                        "\"event\"\(place) may not be \"\(text)\": reset, gap, end and error are the stream's own "
                            + "frames"
                    )
                }
                type = text
            } else {
                throw .invalidBody(
                    "unknown member \(ConfigJSON.quote(reader.text(name)))\(place); an event has \"data\" and an "
                        + "optional \"event\""
                )
            }
        }
        guard let data else { throw .invalidBody("missing \"data\"\(place): send {\"data\": <JSON>}") }
        return ChannelPublication(type: type, data: data)
    }
}

/// One event as a publisher gave it: its optional type and its data as compact JSON.
///
/// **Thread safety:** value type.
struct ChannelPublication: Sendable, Equatable {
    var type: String?
    var data: [UInt8]
}
