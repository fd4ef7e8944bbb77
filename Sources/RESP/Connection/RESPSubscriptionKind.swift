/// The three kinds of pub/sub subscription, with the names of their commands and confirmations.
enum RESPSubscriptionKind: CaseIterable, Sendable {
    case channel
    case pattern
    case shardChannel

    var subscribeName: String {
        switch self {
        case .channel: return "SUBSCRIBE"
        case .pattern: return "PSUBSCRIBE"
        case .shardChannel: return "SSUBSCRIBE"
        }
    }

    /// What a `SUBSCRIBE`-family command does, read from its name (any case); nil for other commands.
    static func command(named name: ArraySlice<UInt8>) -> (kind: RESPSubscriptionKind, subscribes: Bool)? {
        guard name.count >= 9, name.count <= 12 else { return nil }
        let upper = Array(name.lazy.map { $0 >= 0x61 && $0 <= 0x7A ? $0 &- 0x20 : $0 })
        for (index, entry) in commandNames.enumerated() where entry == upper {
            return (allCases[index % 3], index < 3)
        }
        return nil
    }

    /// The kind and direction of a confirmation, read from its exact (lowercase) name.
    static func confirmation(named name: [UInt8]) -> (kind: RESPSubscriptionKind, subscribes: Bool)? {
        for (index, entry) in confirmationNames.enumerated() where entry == name {
            return (allCases[index % 3], index < 3)
        }
        return nil
    }

    /// The confirmation name of this kind's subscribe or unsubscribe command.
    func confirmationName(subscribes: Bool) -> [UInt8] {
        let index = RESPSubscriptionKind.allCases.firstIndex(of: self)! &+ (subscribes ? 0 : 3)
        return RESPSubscriptionKind.confirmationNames[index]
    }

    private static let commandNames: [[UInt8]] = [
        "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE",
    ].map { Array($0.utf8) }
    private static let confirmationNames: [[UInt8]] = [
        "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe",
    ].map { Array($0.utf8) }
}
