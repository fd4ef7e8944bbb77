/// Out-of-band data from the server, as ``RESPConnectionStateMachine`` hands it to its owner: a pub/sub message,
/// or any other push.
///
/// Under RESP3 these arrive as push values (`>`); under RESP2 a subscribed connection receives them as arrays, which
/// the machine recognises by their first element.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public enum RESPPush: Sendable, Equatable {
    /// A message published to a channel this connection subscribed to (`SUBSCRIBE`).
    case message(channel: [UInt8], payload: [UInt8])
    /// A message published to a channel matching a pattern this connection subscribed to (`PSUBSCRIBE`).
    case patternMessage(pattern: [UInt8], channel: [UInt8], payload: [UInt8])
    /// A message published to a shard channel this connection subscribed to (`SSUBSCRIBE`).
    case shardMessage(channel: [UInt8], payload: [UInt8])
    /// Any other push: client-tracking invalidations, a subscription change no command asked for (Redis unsubscribes
    /// shard channels on its own when slots move), or a message of a shape the cases above do not fit.
    case other(RESPValue)

    /// The push that `elements` (the elements of `value`) carry.
    init(elements: [RESPValue], value: RESPValue) {
        func bulk(_ index: Int) -> [UInt8]? {
            guard index < elements.count, case .bulkString(let bytes?) = elements[index] else { return nil }
            return bytes
        }
        switch elements.first?.bytes {
        case RESPPush.messageName?:
            if elements.count == 3, let channel = bulk(1), let payload = bulk(2) {
                self = .message(channel: channel, payload: payload)
                return
            }
        case RESPPush.patternMessageName?:
            if elements.count == 4, let pattern = bulk(1), let channel = bulk(2), let payload = bulk(3) {
                self = .patternMessage(pattern: pattern, channel: channel, payload: payload)
                return
            }
        case RESPPush.shardMessageName?:
            if elements.count == 3, let channel = bulk(1), let payload = bulk(2) {
                self = .shardMessage(channel: channel, payload: payload)
                return
            }
        default:
            break
        }
        self = .other(value)
    }

    static let messageName = Array("message".utf8)
    static let patternMessageName = Array("pmessage".utf8)
    static let shardMessageName = Array("smessage".utf8)

    /// Whether `name`, the first element of an array, makes it a pub/sub message or confirmation.
    static func isPubSubName(_ name: [UInt8]) -> Bool {
        name == messageName || name == patternMessageName || name == shardMessageName
            || RESPSubscriptionKind.confirmation(named: name) != nil
    }
}
