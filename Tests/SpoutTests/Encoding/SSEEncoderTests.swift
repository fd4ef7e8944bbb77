import Foundation
import Testing

@testable import Spout

/// A client-side event-stream parser following the WHATWG algorithm, so the tests check what a
/// browser's `EventSource` would dispatch rather than the bytes we meant to write.
struct EventStreamParser {
    struct Event: Equatable {
        var type = "message"
        var data = ""
        var lastEventID = ""
    }

    var events: [Event] = []
    var retry: Int?
    var comments: [String] = []
    private var data = ""
    private var type = ""
    private var lastEventID = ""

    private var pending = ""

    /// Feeds more of the stream; a line is processed once its terminator has arrived.
    mutating func feed(_ text: String) {
        pending += text
        var lines: [Substring] = []
        var current = Substring()
        var consumed = pending.startIndex
        var index = pending.startIndex
        while index < pending.endIndex {
            let character = pending[index]
            let next = pending.index(after: index)
            if character == "\r" && next == pending.endIndex {
                break  // a CR at the end may be the first half of CRLF
            }
            if character == "\r\n" || character == "\n" || character == "\r" {
                lines.append(current)
                current = Substring()
                consumed = next
            } else {
                current.append(character)
            }
            index = next
        }
        pending = String(pending[consumed...])
        for line in lines { process(line) }
    }

    private mutating func process(_ line: Substring) {
        if line.isEmpty {
            if !data.isEmpty {
                if data.hasSuffix("\n") { data.removeLast() }
                events.append(Event(type: type.isEmpty ? "message" : type, data: data, lastEventID: lastEventID))
            }
            data = ""
            type = ""
            return
        }
        if line.first == ":" {
            comments.append(String(line.dropFirst()).trimmingPrefix(" ").description)
            return
        }
        var field = line
        var value = Substring()
        if let colon = line.firstIndex(of: ":") {
            field = line[..<colon]
            value = line[line.index(after: colon)...]
            if value.first == " " { value = value.dropFirst() }
        }
        switch field {
        case "data": data += value + "\n"
        case "event": type = String(value)
        case "id": if !value.contains("\0") { lastEventID = String(value) }
        case "retry": if let number = Int(value) { retry = number }
        default: break
        }
    }
}

extension String {
    fileprivate func trimmingPrefix(_ prefix: String) -> Substring {
        hasPrefix(prefix) ? dropFirst(prefix.count) : Substring(self)
    }
}

@Suite struct SSEEncoderTests {
    private func parse(_ bytes: [UInt8]) -> EventStreamParser {
        var parser = EventStreamParser()
        parser.feed(String(decoding: bytes, as: UTF8.self))
        return parser
    }

    @Test func eventsRetryAndCommentsRoundTripThroughAClientParser() {
        var bytes: [UInt8] = []
        SSEEncoder.appendRetry(milliseconds: 3000, to: &bytes)
        SSEEncoder.appendEvent(id: "0", data: "0", to: &bytes)
        SSEEncoder.appendComment("keep-alive", to: &bytes)
        SSEEncoder.appendEvent(id: "1", event: "end", data: #"{"reason":"completed"}"#, to: &bytes)
        // Only events end a block: retry and comments are lines inside the next event's block.
        #expect(
            String(decoding: bytes, as: UTF8.self)
                == "retry: 3000\nid: 0\ndata: 0\n\n: keep-alive\nevent: end\nid: 1\ndata: {\"reason\":\"completed\"}\n\n"
        )
        let parser = parse(bytes)
        #expect(parser.retry == 3000)
        #expect(parser.comments == ["keep-alive"])
        #expect(
            parser.events == [
                .init(type: "message", data: "0", lastEventID: "0"),
                .init(type: "end", data: #"{"reason":"completed"}"#, lastEventID: "1"),
            ]
        )
    }

    @Test(arguments: ["a\nb", "a\r\nb", "a\rb", "line\n\ndata: injected\n\nid: 99", "\n", "trailing\n"])
    func multiLineDataIsSplitAndCannotInjectFields(data: String) {
        var bytes: [UInt8] = []
        SSEEncoder.appendEvent(id: "7", data: data, to: &bytes)
        let parser = parse(bytes)
        let normalized = data.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
        #expect(parser.events == [.init(type: "message", data: normalized, lastEventID: "7")])
    }

    @Test func idAndEventValuesCannotBreakOutOfTheirLine() {
        var bytes: [UInt8] = []
        SSEEncoder.appendEvent(id: "1\ndata: evil\n\n", event: "x\r\nid: 5", data: "ok", to: &bytes)
        let parser = parse(bytes)
        #expect(parser.events == [.init(type: "xid: 5", data: "ok", lastEventID: "1data: evil")])
    }
}
