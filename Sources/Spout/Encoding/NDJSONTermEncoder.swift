import HTTPServer
import Sequences

/// Newline-delimited JSON: `{"index":5,"value":"5"}` per line. The last line says how the stream ended:
/// `{"end":{"reason":"completed"}}` (or `"shutdown"`), or, when the producer failed, `{"error":{…problem…}}`
/// instead. A body that stops without either was cut (the connection dropped).
struct NDJSONTermEncoder: NDJSONStreamEncoder {
    init() {}

    @inline(__always)
    func append(_ term: Term, to buffer: inout OutboundBuffer) {
        buffer.append(literal: "{\"index\":")
        _ = buffer.withUnsafeWritableBytes(minimumCapacity: 20) { space in
            BigUInt.writeDecimal(UInt64(truncatingIfNeeded: term.index), to: space.baseAddress!)
        }
        buffer.append(literal: ",\"value\":\"")
        buffer.appendDecimal(term.value)
        buffer.append(literal: "\"}\n")
    }

    /// `{"end":{"reason":"completed"}}` and a newline.
    static func endLine(_ reason: StreamEnd) -> [UInt8] {
        var end = JSONObjectWriter()
        end.add("reason", reason.rawValue)
        var object = JSONObjectWriter()
        object.addRaw("end", json: end.finish())
        var bytes = object.finish()
        bytes.append(0x0A)
        return bytes
    }

    /// `{"error":{…problem…}}` and a newline.
    static func failureLine(_ problem: Problem) -> [UInt8] {
        var object = JSONObjectWriter()
        object.addRaw("error", json: problem.jsonBytes)
        var bytes = object.finish()
        bytes.append(0x0A)
        return bytes
    }
}
