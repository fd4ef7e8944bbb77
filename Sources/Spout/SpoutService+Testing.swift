import EventLoops
import HTTPServer

extension SpoutService {
    /// The channels' broker, access rules and idempotency keys, for tests that look inside.
    var channels: ChannelService { context.channels }

    /// The loops serving connections, for tests (that a stopped service lets them go).
    var eventLoopGroup: EventLoopGroup { server.group }
}
