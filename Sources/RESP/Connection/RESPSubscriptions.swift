/// The channels, patterns and shard channels a connection holds, as the server will see them once it has executed
/// every command written so far.
///
/// ``RESPConnectionStateMachine`` updates it as it writes `SUBSCRIBE`-family commands and restores it on every new
/// connection, so subscriptions survive a reconnect.
///
/// **Ownership:** A value, kept by the state machine.
/// **Thread safety:** Value type; not shared.
public struct RESPSubscriptions: Sendable, Equatable {
    /// Channels subscribed with `SUBSCRIBE`.
    public internal(set) var channels: Set<[UInt8]> = []
    /// Patterns subscribed with `PSUBSCRIBE`.
    public internal(set) var patterns: Set<[UInt8]> = []
    /// Shard channels subscribed with `SSUBSCRIBE`.
    public internal(set) var shardChannels: Set<[UInt8]> = []

    /// Whether nothing is subscribed.
    public var isEmpty: Bool { channels.isEmpty && patterns.isEmpty && shardChannels.isEmpty }

    subscript(kind: RESPSubscriptionKind) -> Set<[UInt8]> {
        get {
            switch kind {
            case .channel: return channels
            case .pattern: return patterns
            case .shardChannel: return shardChannels
            }
        }
        set {
            switch kind {
            case .channel: channels = newValue
            case .pattern: patterns = newValue
            case .shardChannel: shardChannels = newValue
            }
        }
    }

    /// The commands that subscribe a fresh connection to everything here, at most `batch` names per command.
    func restoringCommands(batch: Int = 1000) -> [RESPCommand] {
        var commands: [RESPCommand] = []
        for kind in RESPSubscriptionKind.allCases {
            let names = self[kind].sorted { $0.lexicographicallyPrecedes($1) }
            var start = 0
            while start < names.count {
                var command = RESPCommand(kind.subscribeName)
                for name in names[start..<min(names.count, start &+ batch)] {
                    command.append(name)
                }
                commands.append(command)
                start &+= batch
            }
        }
        return commands
    }
}
