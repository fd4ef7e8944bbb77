/// The life of one client connection to Redis, as pure state: events in, actions out.
///
/// It knows nothing of sockets, threads or clocks. Its owner opens sockets when told (``Action/connect``), writes
/// the commands it is given, feeds the bytes it reads (``bytesReceived(_:now:)`` then ``nextReceivedAction(now:)``
/// until nil), reports a connection that opened or failed, and arms one timer at ``nextDeadline``, calling
/// ``timerFired(now:)`` when it expires. Every event returns an ``Action`` for the owner to carry out. Times are
/// instants of `ContinuousClock`, passed in as `now`, so tests drive the machine in virtual time.
///
/// What it does with that:
/// - **Handshake**: `HELLO 3` (with `AUTH` and `SETNAME` when configured) selects RESP3; a server without `HELLO`
///   (Redis 5 and older) falls back to `AUTH` and RESP2. Then `SELECT` when the database is not 0, and the
///   subscriptions the connection held before are restored. Only then is it ``Status/ready`` and the commands
///   sent meanwhile are written (``Action/ready(write:)``).
/// - **Pipelining**: commands are written as they are sent and matched to replies in order. An error reply is a
///   reply (``RESPValue/error(_:)``); the connection's own failures are ``RESPConnectionError``s.
/// - **Subscriber mode**: `SUBSCRIBE`-family commands complete once every channel they name is confirmed (their
///   reply is the array of confirmations); messages arrive as ``Action/push(_:)`` between replies, as RESP3 pushes
///   or, under RESP2, as arrays recognised by their first element. The subscriptions are tracked
///   (``subscriptions``) and restored on every new connection.
/// - **Timeouts**: the oldest command waiting must get its reply within its timeout, counted from when it was
///   written or from the reply before it, whichever is later; otherwise the connection is deemed dead. Connecting
///   plus the handshake has its own limit. An idle connection sends `PING` every ``Configuration/pingInterval`` so a
///   silent network failure is found.
/// - **Failure and reconnect**: a lost connection, a timeout, a protocol violation or a refused handshake fails
///   every command waiting (written or queued) with one error, closes the socket, and schedules the next attempt
///   after the ``RESPReconnectPolicy`` delay. While waiting, new commands fail at once with
///   ``RESPConnectionError/notConnected`` (nothing is queued behind an outage); while connecting they are queued.
///
/// A timeout, like any failure, fails every waiting command: a pipeline cannot skip a reply. Put blocking commands
/// (`XREAD BLOCK`, `BLPOP`) on a connection of their own, with a timeout above their blocking time.
///
/// **Ownership:** Owned by the connection that drives it, for the client's lifetime.
/// **Thread safety:** Value type; not shared. Its owner calls it from one event loop.
public struct RESPConnectionStateMachine<Context> {
    /// How the machine connects, authenticates, times out and reconnects.
    ///
    /// **Ownership:** A value; copied into the machine.
    /// **Thread safety:** Value type; not shared.
    public struct Configuration: Sendable {
        /// The ACL user; nil authenticates as `default` when a password is set.
        public var username: String?
        /// The password; nil sends no `AUTH`.
        public var password: String?
        /// The database to `SELECT`; 0 (the default) sends no `SELECT`.
        public var database: Int
        /// A name for `CLIENT LIST` (`HELLO … SETNAME`); nil sets none.
        public var clientName: String?
        /// The default timeout of a command (see the type's discussion); nil waits forever. Default 5 s.
        public var commandTimeout: Duration?
        /// The limit on opening the socket plus the whole handshake. Default 5 s.
        public var connectTimeout: Duration
        /// How long a ready connection with nothing outstanding stays silent before it sends `PING`; nil never
        /// pings. Default 15 s.
        public var pingInterval: Duration?
        /// The most of the owner's commands waiting at once, written or queued (the machine's own — handshake,
        /// restored subscriptions, `PING` — are not counted). Default 10,000.
        public var maxPendingCommands: Int
        /// When to reconnect after a failure.
        public var reconnect: RESPReconnectPolicy
        /// The limits on what the server may send.
        public var parser: RESPParser.Configuration
        /// Whether a server without RESP3 (no `HELLO 3`: Redis before 6) is refused rather than spoken to in
        /// RESP2: the handshake fails with a message that says so, and the connection retries like after any
        /// failure. For owners that read and receive pushes on one connection, which RESP2 does not allow.
        public var requiresRESP3: Bool

        public init(
            username: String? = nil,
            password: String? = nil,
            database: Int = 0,
            clientName: String? = nil,
            commandTimeout: Duration? = .seconds(5),
            connectTimeout: Duration = .seconds(5),
            pingInterval: Duration? = .seconds(15),
            maxPendingCommands: Int = 10_000,
            reconnect: RESPReconnectPolicy = RESPReconnectPolicy(),
            parser: RESPParser.Configuration = RESPParser.Configuration(),
            requiresRESP3: Bool = false
        ) {
            self.username = username
            self.password = password
            self.database = max(0, database)
            self.clientName = clientName
            self.commandTimeout = commandTimeout
            self.connectTimeout = connectTimeout
            self.pingInterval = pingInterval
            self.maxPendingCommands = max(1, maxPendingCommands)
            self.reconnect = reconnect
            self.parser = parser
            self.requiresRESP3 = requiresRESP3
        }
    }

    /// What the owner must do after an event.
    public enum Action {
        /// Nothing.
        case none
        /// Open a socket to the server; then report ``connected(now:)`` or ``connectionClosed(_:now:)``.
        case connect
        /// Write this command.
        case write(RESPCommand)
        /// Write these commands, in order.
        case writeAll([RESPCommand])
        /// The connection is ready (again): write these commands, sent while it was connecting, in order. A
        /// subscriber that may have missed messages while disconnected catches up now: its subscriptions are
        /// already restored.
        case ready(write: [RESPCommand])
        /// A command's reply (which may be an error reply).
        case reply(Context, RESPValue)
        /// A command failed without a reply.
        case fail(Context, RESPConnectionError)
        /// A push: a pub/sub message or other out-of-band data.
        case push(RESPPush)
        /// Close the socket if one is open, and fail these commands with `error`. When `reconnectAfter` is set the
        /// machine connects again after that delay (it is ``nextDeadline``); when nil it is closed for good.
        case close(failing: [Context], error: RESPConnectionError, reconnectAfter: Duration?)
    }

    /// Where the connection is, for readiness checks and metrics.
    public enum Status: Equatable, Sendable {
        /// Not started.
        case idle
        /// The owner is opening the socket.
        case connecting
        /// The socket is open; `HELLO`, `AUTH`, `SELECT` or the restored subscriptions are in flight.
        case handshaking
        /// Commands are written as they are sent.
        case ready
        /// The last attempt failed; the next one starts at the instant given.
        case waitingToReconnect(until: ContinuousClock.Instant)
        /// Closed by the owner or given up; final.
        case closed
    }

    fileprivate enum State {
        /// Not started. Next: `connecting`, `closed`.
        case idle
        /// The owner is opening the socket. Next: `handshaking`, `waitingToReconnect`, `closed`.
        case connecting(deadline: ContinuousClock.Instant)
        /// The socket is open and the handshake runs. Next: `ready`, `waitingToReconnect`, `closed`.
        case handshaking(Handshake, deadline: ContinuousClock.Instant)
        /// Commands are written as they are sent. Next: `waitingToReconnect`, `closed`.
        case ready
        /// The last connection or attempt failed. Next: `connecting`, `closed`.
        case waitingToReconnect(until: ContinuousClock.Instant)
        /// Final.
        case closed
    }

    /// The handshake's progress.
    fileprivate enum Handshake {
        /// These commands are still to be written after the one in flight.
        case steps([HandshakeStep])
        /// The restored subscriptions are written; this many commands are not yet fully confirmed.
        case restoring(remaining: Int)
    }

    fileprivate enum HandshakeStep {
        case hello
        case auth
        case setName
        case select
    }

    /// A written command waiting for its reply.
    fileprivate struct Pending {
        enum Origin {
            case user(Context)
            case handshake(HandshakeStep)
            case restore
            case ping
        }

        enum Expectation {
            /// One reply.
            case reply
            /// `remaining` more confirmations named `name`; those received so far.
            case confirmations(name: [UInt8], remaining: Int, received: [RESPValue])
        }

        var origin: Origin
        var expectation: Expectation
        var sentAt: ContinuousClock.Instant
        var timeout: Duration?
    }

    /// A command sent while connecting, written once the connection is ready.
    fileprivate struct Queued {
        var command: RESPCommand
        var context: Context
        var timeout: Duration?
    }

    /// The configuration the machine was created with.
    public let configuration: Configuration

    private var state: State = .idle
    /// Written commands, oldest first. Empty outside `handshaking` and `ready`.
    private var pending = RESPQueue<Pending>()
    /// Commands sent while idle, connecting or handshaking. Empty in the other states.
    private var queued = RESPQueue<Queued>()
    /// How many entries of `pending` expect confirmations.
    private var confirmationsPending = 0
    /// How many entries of `pending` the machine wrote itself (handshake, restored subscriptions, `PING`): they
    /// do not count against ``Configuration/maxPendingCommands``.
    private var internalPendingCount = 0
    /// Reads the current connection's bytes; replaced for each connection.
    private var parser: RESPParser
    /// The subscriptions as the server will hold them after the written commands (restored on reconnect).
    public private(set) var subscriptions = RESPSubscriptions()
    /// 3 after a successful `HELLO 3`, 2 after falling back; nil before the handshake got that far.
    public private(set) var protocolVersion: Int?
    /// Consecutive failed attempts since the connection was last ready.
    public private(set) var consecutiveFailures = 0
    /// When the last reply (or confirmation) arrived on this connection.
    private var lastReplyAt: ContinuousClock.Instant?
    /// When the last bytes arrived, or the connection became ready.
    private var lastReceivedAt: ContinuousClock.Instant?
    private var random: SplitMix64

    /// Creates a machine that has not started.
    ///
    /// - Parameter seed: Seeds the jitter of reconnect delays; pass a random number in production (so replicas
    ///   spread out) and a constant in tests.
    public init(configuration: Configuration, seed: UInt64) {
        self.configuration = configuration
        parser = RESPParser(configuration: configuration.parser)
        random = SplitMix64(seed: seed)
    }

    // MARK: - Observing

    /// Where the connection is.
    public var status: Status {
        switch state {
        case .idle: return .idle
        case .connecting: return .connecting
        case .handshaking: return .handshaking
        case .ready: return .ready
        case .waitingToReconnect(let until): return .waitingToReconnect(until: until)
        case .closed: return .closed
        }
    }

    /// How many of the owner's commands wait for a reply or to be written (the handshake's, the restored
    /// subscriptions' and the keep-alive `PING`s are not counted).
    public var waitingCommandCount: Int { pending.count &- internalPendingCount &+ queued.count }

    /// When ``timerFired(now:)`` must be called next, or nil when no timer is needed.
    public var nextDeadline: ContinuousClock.Instant? {
        switch state {
        case .idle, .closed:
            return nil
        case .connecting(let deadline), .handshaking(_, let deadline):
            return deadline
        case .waitingToReconnect(let until):
            return until
        case .ready:
            if let head = pending.first {
                return head.timeout.map { replyStart(of: head) + $0 }
            }
            guard let interval = configuration.pingInterval, let lastReceivedAt else { return nil }
            return lastReceivedAt + interval
        }
    }

    // MARK: - Events from the owner

    /// The owner starts the client: the first connection attempt begins.
    public mutating func start(now: ContinuousClock.Instant) -> Action {
        guard case .idle = state else { return .none }
        state = .connecting(deadline: now + configuration.connectTimeout)
        return .connect
    }

    /// The socket asked for by ``Action/connect`` is open.
    public mutating func connected(now: ContinuousClock.Instant) -> Action {
        switch state {
        case .connecting(let deadline):
            parser = RESPParser(configuration: configuration.parser)
            protocolVersion = nil
            lastReplyAt = nil
            lastReceivedAt = now
            state = .handshaking(.steps(configuration.database == 0 ? [] : [.select]), deadline: deadline)
            return .write(writePending(helloCommand, origin: .handshake(.hello), timeout: nil, now: now))
        case .idle, .waitingToReconnect, .closed:
            // A socket nobody asked for any more (the machine was closed, or gave the attempt up): drop it.
            return .close(failing: [], error: .closed, reconnectAfter: nil)
        case .handshaking, .ready:
            preconditionFailure("API violation: connected(now:) while already connected")
        }
    }

    /// The socket closed or failed (including a failed attempt to open it); `reason` says why, for the error.
    public mutating func connectionClosed(_ reason: String, now: ContinuousClock.Instant) -> Action {
        switch state {
        case .connecting, .handshaking, .ready:
            return fail(with: .connectionLost(reason), reconnect: true, now: now)
        case .idle, .waitingToReconnect, .closed:
            return .none
        }
    }

    /// Bytes arrived on the socket; pull what they complete with ``nextReceivedAction(now:)``.
    public mutating func bytesReceived(_ bytes: UnsafeRawBufferPointer, now: ContinuousClock.Instant) {
        guard isConnected else { return }
        parser.append(bytes)
        lastReceivedAt = now
    }

    /// Bytes arrived on the socket; pull what they complete with ``nextReceivedAction(now:)``.
    public mutating func bytesReceived(_ bytes: some Collection<UInt8>, now: ContinuousClock.Instant) {
        guard isConnected else { return }
        parser.append(bytes)
        lastReceivedAt = now
    }

    /// The action for the next complete value received, or nil when the bytes received so far hold none. Call it
    /// until it returns nil after every ``bytesReceived(_:now:)``; ``Action/none`` means "go on".
    public mutating func nextReceivedAction(now: ContinuousClock.Instant) -> Action? {
        guard isConnected else { return nil }
        let value: RESPValue
        do throws(RESPParseError) {
            guard let next = try parser.next() else { return nil }
            value = next
        } catch {
            return fail(with: .protocolViolation(error), reconnect: true, now: now)
        }
        return received(value, now: now)
    }

    /// The timer armed at ``nextDeadline`` expired (a timer that fires early does nothing).
    public mutating func timerFired(now: ContinuousClock.Instant) -> Action {
        switch state {
        case .idle, .closed:
            return .none
        case .connecting(let deadline), .handshaking(_, let deadline):
            guard now >= deadline else { return .none }
            return fail(with: .connectTimedOut(limit: configuration.connectTimeout), reconnect: true, now: now)
        case .waitingToReconnect(let until):
            guard now >= until else { return .none }
            state = .connecting(deadline: now + configuration.connectTimeout)
            return .connect
        case .ready:
            if let head = pending.first {
                guard let timeout = head.timeout, now >= replyStart(of: head) + timeout else { return .none }
                return fail(with: .timedOut(limit: timeout), reconnect: true, now: now)
            }
            guard let interval = configuration.pingInterval, let lastReceivedAt, now >= lastReceivedAt + interval
            else { return .none }
            let timeout = configuration.commandTimeout ?? interval
            return .write(writePending(RESPCommand("PING"), origin: .ping, timeout: timeout, now: now))
        }
    }

    /// Sends a command with the configured ``Configuration/commandTimeout``.
    public mutating func send(_ command: RESPCommand, context: Context, now: ContinuousClock.Instant) -> Action {
        send(command, context: context, timeout: configuration.commandTimeout, now: now)
    }

    /// Sends a command; its reply (or failure) comes back with `context`.
    ///
    /// - Parameter timeout: This command's timeout (see the type's discussion); nil waits forever.
    /// - Returns: ``Action/write(_:)`` when ready; ``Action/none`` when queued until the connection is;
    ///   ``Action/fail(_:_:)`` while waiting to reconnect, when closed, or beyond
    ///   ``Configuration/maxPendingCommands``.
    public mutating func send(
        _ command: RESPCommand,
        context: Context,
        timeout: Duration?,
        now: ContinuousClock.Instant
    ) -> Action {
        switch state {
        case .waitingToReconnect:
            return .fail(context, .notConnected)
        case .closed:
            return .fail(context, .closed)
        case .idle, .connecting, .handshaking, .ready:
            break
        }
        guard waitingCommandCount < configuration.maxPendingCommands else {
            return .fail(context, .tooManyPendingCommands(limit: configuration.maxPendingCommands))
        }
        guard case .ready = state else {
            queued.append(Queued(command: command, context: context, timeout: timeout))
            return .none
        }
        return .write(writePending(command, origin: .user(context), timeout: timeout, now: now))
    }

    /// The owner closes the client for good: every waiting command fails with ``RESPConnectionError/closed``.
    public mutating func close(now: ContinuousClock.Instant) -> Action {
        if case .closed = state {
            return .none
        }
        return fail(with: .closed, reconnect: false, now: now)
    }

    // MARK: - Replies

    private var isConnected: Bool {
        switch state {
        case .handshaking, .ready: return true
        case .idle, .connecting, .waitingToReconnect, .closed: return false
        }
    }

    private mutating func received(_ value: RESPValue, now: ContinuousClock.Instant) -> Action {
        let plain = value.withoutAttributes
        if let elements = pushElements(of: plain) {
            return receivedPush(value, elements: elements, now: now)
        }
        guard let head = pending.first else {
            return fail(
                with: .unexpectedReply(value.briefDescription),
                reconnect: true,
                now: now
            )
        }
        if case .confirmations = head.expectation, plain.errorMessage == nil {
            return fail(
                with: .unexpectedReply("\(value.briefDescription) instead of a confirmation"),
                reconnect: true,
                now: now
            )
        }
        _ = pending.removeFirst()
        if case .confirmations = head.expectation {
            confirmationsPending &-= 1
        }
        lastReplyAt = now
        return complete(head.origin, with: value, now: now)
    }

    /// The elements of `value` when it is a push: a RESP3 push, or under RESP2 an array that a subscribed connection
    /// receives in place of one.
    private func pushElements(of value: RESPValue) -> [RESPValue]? {
        switch value {
        case .push(let elements):
            return elements
        case .array(let elements?) where protocolVersion != 3:
            guard confirmationsPending > 0 || !subscriptions.isEmpty, let name = elements.first?.bytes,
                RESPPush.isPubSubName(name)
            else { return nil }
            return elements
        default:
            return nil
        }
    }

    private mutating func receivedPush(_ value: RESPValue, elements: [RESPValue], now: ContinuousClock.Instant)
        -> Action
    {
        guard let name = elements.first?.bytes, RESPSubscriptionKind.confirmation(named: name) != nil,
            case .confirmations(let expected, _, _)? = pending.first?.expectation, expected == name
        else {
            return .push(RESPPush(elements: elements, value: value))
        }
        lastReplyAt = now
        var done = false
        pending.updateFirst { head in
            guard case .confirmations(let name, let remaining, var received) = head.expectation else { return }
            received.append(value)
            head.expectation = .confirmations(name: name, remaining: remaining &- 1, received: received)
            done = remaining == 1
        }
        guard done, let head = pending.removeFirst(),
            case .confirmations(_, _, let received) = head.expectation
        else { return .none }
        confirmationsPending &-= 1
        return complete(head.origin, with: .array(received), now: now)
    }

    private mutating func complete(_ origin: Pending.Origin, with value: RESPValue, now: ContinuousClock.Instant)
        -> Action
    {
        if case .user = origin {
        } else {
            internalPendingCount &-= 1
        }
        switch origin {
        case .user(let context):
            return .reply(context, value)
        case .ping:
            return .none
        case .handshake(let step):
            return handshakeReplied(step, value, now: now)
        case .restore:
            if let message = value.withoutAttributes.errorMessage {
                return fail(with: .handshakeFailed(command: "SUBSCRIBE", message: message), reconnect: true, now: now)
            }
            guard case .handshaking(.restoring(let remaining), let deadline) = state else {
                preconditionFailure("internal inconsistency: subscription restored in \(state)")
            }
            if remaining > 1 {
                state = .handshaking(.restoring(remaining: remaining &- 1), deadline: deadline)
                return .none
            }
            return becomeReady(now: now)
        }
    }

    // MARK: - Handshake

    private mutating func handshakeReplied(_ step: HandshakeStep, _ value: RESPValue, now: ContinuousClock.Instant)
        -> Action
    {
        guard case .handshaking(.steps(var steps), let deadline) = state else {
            preconditionFailure("internal inconsistency: handshake reply in \(state)")
        }
        if let message = value.withoutAttributes.errorMessage {
            guard case .hello = step, RESPConnectionStateMachine.lacksHello(message) else {
                return fail(with: .handshakeFailed(command: step.name, message: message), reconnect: true, now: now)
            }
            guard !configuration.requiresRESP3 else {
                let reason = "\(message) (RESP3 is required: Redis 6 or later)"
                return fail(with: .handshakeFailed(command: step.name, message: reason), reconnect: true, now: now)
            }
            protocolVersion = 2
            var fallback: [HandshakeStep] = []
            if configuration.password != nil { fallback.append(.auth) }
            if configuration.clientName != nil { fallback.append(.setName) }
            steps = fallback + steps
        } else if case .hello = step {
            protocolVersion = 3
        }
        guard !steps.isEmpty else {
            return restoreSubscriptions(now: now)
        }
        let next = steps.removeFirst()
        state = .handshaking(.steps(steps), deadline: deadline)
        return .write(writePending(command(for: next), origin: .handshake(next), timeout: nil, now: now))
    }

    /// Whether a `HELLO` error means the server predates it (or RESP3 is off), so RESP2 and `AUTH` follow.
    private static func lacksHello(_ message: String) -> Bool {
        message.hasPrefix("NOPROTO") || (message.hasPrefix("ERR") && message.contains("unknown command"))
    }

    private mutating func restoreSubscriptions(now: ContinuousClock.Instant) -> Action {
        guard case .handshaking(_, let deadline) = state else {
            preconditionFailure("internal inconsistency: restoring subscriptions in \(state)")
        }
        let commands = subscriptions.restoringCommands()
        guard !commands.isEmpty else { return becomeReady(now: now) }
        state = .handshaking(.restoring(remaining: commands.count), deadline: deadline)
        for command in commands {
            _ = writePending(command, origin: .restore, timeout: nil, now: now)
        }
        return .writeAll(commands)
    }

    private mutating func becomeReady(now: ContinuousClock.Instant) -> Action {
        state = .ready
        consecutiveFailures = 0
        lastReceivedAt = now
        var commands: [RESPCommand] = []
        commands.reserveCapacity(queued.count)
        for entry in queued.removeAll() {
            commands.append(writePending(entry.command, origin: .user(entry.context), timeout: entry.timeout, now: now))
        }
        return .ready(write: commands)
    }

    private var helloCommand: RESPCommand {
        var hello = RESPCommand("HELLO", "3")
        if let password = configuration.password {
            hello.append("AUTH")
            hello.append(configuration.username ?? "default")
            hello.append(password)
        }
        if let name = configuration.clientName {
            hello.append("SETNAME")
            hello.append(name)
        }
        return hello
    }

    private func command(for step: HandshakeStep) -> RESPCommand {
        switch step {
        case .hello:
            return helloCommand
        case .auth:
            var auth = RESPCommand("AUTH")
            if let username = configuration.username {
                auth.append(username)
            }
            auth.append(configuration.password ?? "")
            return auth
        case .setName:
            return RESPCommand("CLIENT", "SETNAME", configuration.clientName ?? "")
        case .select:
            var select = RESPCommand("SELECT")
            select.append(configuration.database)
            return select
        }
    }

    // MARK: - Writing and failing

    /// Records `command` as written: what it waits for, and what it changes in ``subscriptions``.
    private mutating func writePending(
        _ command: RESPCommand,
        origin: Pending.Origin,
        timeout: Duration?,
        now: ContinuousClock.Instant
    ) -> RESPCommand {
        var expectation = Pending.Expectation.reply
        if let (kind, subscribes) = RESPSubscriptionKind.command(named: command.firstArgument) {
            var arguments: [ArraySlice<UInt8>] = []
            command.forEachArgument { arguments.append($0) }
            arguments.removeFirst()
            let confirmation = kind.confirmationName(subscribes: subscribes)
            if subscribes {
                if !arguments.isEmpty {
                    expectation = .confirmations(name: confirmation, remaining: arguments.count, received: [])
                    for argument in arguments {
                        subscriptions[kind].insert(Array(argument))
                    }
                }
            } else if arguments.isEmpty {
                let count = max(1, subscriptions[kind].count)
                expectation = .confirmations(name: confirmation, remaining: count, received: [])
                subscriptions[kind].removeAll()
            } else {
                expectation = .confirmations(name: confirmation, remaining: arguments.count, received: [])
                for argument in arguments {
                    subscriptions[kind].remove(Array(argument))
                }
            }
        }
        if case .confirmations = expectation {
            confirmationsPending &+= 1
        }
        if case .user = origin {
        } else {
            internalPendingCount &+= 1
        }
        pending.append(Pending(origin: origin, expectation: expectation, sentAt: now, timeout: timeout))
        return command
    }

    /// Fails every waiting command with `error` and closes the connection; schedules the next attempt when
    /// `reconnect` is true and the policy allows one.
    private mutating func fail(with error: RESPConnectionError, reconnect: Bool, now: ContinuousClock.Instant)
        -> Action
    {
        var failing: [Context] = []
        failing.reserveCapacity(waitingCommandCount)
        for entry in pending.removeAll() {
            if case .user(let context) = entry.origin {
                failing.append(context)
            }
        }
        for entry in queued.removeAll() {
            failing.append(entry.context)
        }
        confirmationsPending = 0
        internalPendingCount = 0
        parser = RESPParser(configuration: configuration.parser)
        lastReplyAt = nil
        lastReceivedAt = nil
        guard reconnect, configuration.reconnect.allowsAttempt(after: consecutiveFailures) else {
            state = .closed
            return .close(failing: failing, error: error, reconnectAfter: nil)
        }
        consecutiveFailures &+= 1
        let delay = configuration.reconnect.delay(afterFailure: consecutiveFailures, random: random.nextUnit())
        state = .waitingToReconnect(until: now + delay)
        return .close(failing: failing, error: error, reconnectAfter: delay)
    }

    /// When the head's reply time started: when it was written, or when the reply before it arrived.
    private func replyStart(of head: Pending) -> ContinuousClock.Instant {
        guard let lastReplyAt else { return head.sentAt }
        return max(head.sentAt, lastReplyAt)
    }
}

extension RESPConnectionStateMachine: Sendable where Context: Sendable {}
extension RESPConnectionStateMachine.Action: Sendable where Context: Sendable {}
extension RESPConnectionStateMachine.Action: Equatable where Context: Equatable {}
extension RESPConnectionStateMachine.Pending: Sendable where Context: Sendable {}
extension RESPConnectionStateMachine.Pending.Origin: Sendable where Context: Sendable {}
extension RESPConnectionStateMachine.Queued: Sendable where Context: Sendable {}

extension RESPConnectionStateMachine.HandshakeStep {
    fileprivate var name: String {
        switch self {
        case .hello: return "HELLO"
        case .auth: return "AUTH"
        case .setName: return "CLIENT SETNAME"
        case .select: return "SELECT"
        }
    }
}

/// A small, fast, seedable generator for reconnect jitter (Vigna's SplitMix64), so the machine stays deterministic
/// under a fixed seed.
///
/// **Ownership:** A value, owned by the state machine.
/// **Thread safety:** Value type; not shared.
struct SplitMix64: Sendable {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z &>> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z &>> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z &>> 31)
    }

    /// A uniform number in `[0, 1)`.
    mutating func nextUnit() -> Double {
        Double(next() &>> 11) * 0x1p-53
    }
}
