import Foundation
import Synchronization

/// One event of a channel, encoded once for every subscriber: its SSE frame and its NDJSON line are built when
/// it is published, and each subscriber's stream appends the same bytes. (The data is kept only inside the two.) Also the control frames a stream
/// may carry between events (``reset(reason:oldest:)``, ``gap(missed:after:)``), which have no id.
///
/// **Ownership:** shared by the channel's history, its latest-value subject and every subscriber that has it
/// waiting; freed when the last lets go.
///
/// **Thread safety:** immutable; shared freely.
final class ChannelEvent: Sendable {
    /// The event's position in its channel (0 for a control frame).
    let sequence: UInt64
    /// The id sent to clients (empty for a control frame).
    let id: String
    /// The `event` type given by the publisher, if any; for a control frame, its name (`reset`, `gap`).
    let eventType: String?
    /// `id: …`, `event: …` when typed, `data: …` and the blank line.
    let sse: [UInt8]
    /// `{"id":"…","event":"…","data":…}` and a newline.
    let ndjson: [UInt8]
    /// Where in ``ndjson`` the event's data (for a control frame: its JSON object) starts; it ends two bytes
    /// before the line does (`}` and the newline). The multi-channel streams re-wrap it (``payload``).
    let payloadStart: Int
    /// When it was published, in monotonic nanoseconds (for the history's age limit).
    let publishedAt: UInt64
    /// For a control frame sent to subscribers already live (channels over Redis, when the channel's history
    /// broke under them): whether they take it in their live stream, and whether the sequences they count
    /// start over (the history they were in is gone, the next event's sequence is small again).
    let live: LiveControl?
    /// For a live control frame: its place among all live control frames made (from 1), so a subscription takes
    /// each once even when a fan-out pass hands it out again, and one that joined after it never takes it.
    let controlSerial: UInt64

    /// The serial of the last live control frame made.
    static var lastControlSerial: UInt64 { controlSerials.load(ordering: .acquiring) }
    private static let controlSerials = Atomic<UInt64>(0)

    /// What a control frame sent to live subscribers does to them.
    enum LiveControl: Sendable {
        /// Events were lost between the last one delivered and the next (history truncated meanwhile).
        case gap
        /// The history is gone; sequences start over.
        case restart
    }

    /// Bytes this event accounts for in a history or a subscriber's buffer: both encodings.
    var byteCount: Int { sse.count &+ ndjson.count }

    /// An event of a channel, encoded.
    init(id: ChannelEventID, type: String?, data: [UInt8], publishedAt: UInt64) {
        let idText = id.description
        self.sequence = id.sequence
        self.id = idText
        self.eventType = type
        self.publishedAt = publishedAt
        self.live = nil
        self.controlSerial = 0
        var sse: [UInt8] = []
        sse.reserveCapacity(data.count + idText.utf8.count + (type?.utf8.count ?? 0) + 24)
        sse.append(contentsOf: "id: ".utf8)
        sse.append(contentsOf: idText.utf8)
        sse.append(0x0A)
        if let type {
            sse.append(contentsOf: "event: ".utf8)
            sse.append(contentsOf: type.utf8)
            sse.append(0x0A)
        }
        // Compact JSON has no raw line breaks (they are escaped inside strings), so one data line carries it.
        sse.append(contentsOf: "data: ".utf8)
        sse.append(contentsOf: data)
        sse.append(contentsOf: [0x0A, 0x0A])
        self.sse = sse
        var line: [UInt8] = []
        line.reserveCapacity(data.count + idText.utf8.count + (type?.utf8.count ?? 0) + 32)
        line.append(contentsOf: #"{"id":"#.utf8)
        JSONText.appendString(idText, to: &line)
        if let type {
            line.append(contentsOf: #","event":"#.utf8)
            JSONText.appendString(type, to: &line)
        }
        line.append(contentsOf: #","data":"#.utf8)
        self.payloadStart = line.count
        line.append(contentsOf: data)
        line.append(contentsOf: "}\n".utf8)
        self.ndjson = line
    }

    private init(name: String, controlSSE: [UInt8], ndjson: [UInt8], live: LiveControl? = nil) {
        self.sequence = 0
        self.id = ""
        self.eventType = name
        // `{"<name>":` then the object.
        self.payloadStart = name.utf8.count &+ 4
        self.sse = controlSSE
        self.ndjson = ndjson
        self.publishedAt = 0
        self.live = live
        self.controlSerial =
            live == nil ? 0 : Self.controlSerials.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue
    }

    /// Whether this is a control frame (`reset`, `gap`) rather than an event of the channel.
    var isControl: Bool { sequence == 0 }

    /// The event's data as the publisher gave it (compact JSON), or a control frame's JSON object; a slice of
    /// ``ndjson``, not a copy.
    var payload: ArraySlice<UInt8> { ndjson[payloadStart..<(ndjson.count &- 2)] }

    /// The event as the JSON object of `GET /channels/{name}/latest`: the NDJSON line without its newline.
    var jsonObject: [UInt8] { Array(ndjson.dropLast()) }

    /// Why a resuming client gets a ``reset(reason:oldest:)``.
    enum ResetReason: String, Sendable {
        /// The id was in this history, but events after it have been dropped (count, bytes or age).
        case historyTruncated = "history-truncated"
        /// The id is not one of this history's: from an earlier run of the server, or not an id at all.
        case unknownID = "unknown-id"
    }

    /// `event: reset` with `{"reason":…,"oldest":"<id>"|null}`: the client missed events the history no longer
    /// holds (or cannot tell where it was); what follows is the whole history from `oldest`. No `id:` field, so
    /// the client's last event id stays what it was until the next event.
    static func reset(reason: ResetReason, oldest: String?, live: LiveControl? = nil) -> ChannelEvent {
        var object = JSONObjectWriter()
        object.add("reason", reason.rawValue)
        if let oldest { object.add("oldest", oldest) } else { object.addNull("oldest") }
        return control(name: "reset", json: object.finish(), live: live)
    }

    /// `event: gap` with `{"missed":n,"after":"<id>"}` (policy `drop-oldest`): `n` events after `after` were
    /// dropped because this subscriber read too slowly.
    static func gap(missed: Int, after: String?) -> ChannelEvent {
        var object = JSONObjectWriter()
        object.add("missed", missed)
        if let after { object.add("after", after) } else { object.addNull("after") }
        return control(name: "gap", json: object.finish())
    }

    private static func control(name: String, json: [UInt8], live: LiveControl? = nil) -> ChannelEvent {
        var sse = Array("event: \(name)\ndata: ".utf8)
        sse.append(contentsOf: json)
        sse.append(contentsOf: [0x0A, 0x0A])
        var line = Array(#"{""#.utf8)
        line.append(contentsOf: name.utf8)
        line.append(contentsOf: #"":"#.utf8)
        line.append(contentsOf: json)
        line.append(contentsOf: "}\n".utf8)
        return ChannelEvent(name: name, controlSSE: sse, ndjson: line, live: live)
    }
}
