import Dispatch
import EventLoops
import Glibc
import OpenSSL
import RESP
import Reactive
import Synchronization

/// One client connection to a Redis server on a non-blocking socket, driven by an ``EventLoop``.
///
/// All protocol decisions — the handshake (`HELLO 3`, `AUTH`, `SELECT` from the URL), pipelining, timeouts,
/// subscriptions and their restoration, reconnecting with exponential backoff and jitter — are the
/// ``RESPConnectionStateMachine``'s; this class carries out its actions with the loop's poller, read buffer and one
/// Dispatch timer. No thread is blocked per connection and nothing blocks the loop: the socket connects
/// non-blocking, a numeric host is used as it is and a host name is resolved on a global queue.
///
///     let redis = RedisConnection(configuration: RedisConfiguration(url: try RedisURL(parsing: "redis://127.0.0.1")),
///                                 loop: group.loops[0])
///     redis.start()
///     let cancellable = redis.send(RESPCommand("INCR", "hits")).sink(
///         receiveCompletion: { _ in }, receiveValue: { print($0) })
///
/// Commands are written in the order they are sent (from one thread; across threads, in the order their calls
/// took the inbox lock) and their replies matched in that order, many in flight at once. A server error reply is
/// ``RedisError/server(_:)``; a failure of the connection is ``RedisError/connection(_:)``. While the client waits
/// to reconnect, a command fails at once with `notConnected` (nothing queues behind an outage); during a connection
/// attempt commands queue, up to ``RedisConfiguration/maxPendingCommands``. A reply larger than
/// ``RedisConfiguration/maxReplyBytes`` closes the connection (and reconnects), so a hostile server cannot grow the
/// client's memory without bound.
///
/// A blocking read (``xread(_:count:block:)`` with `block`) holds the pipeline until it returns: give it a
/// connection of its own. So for subscriptions (``subscribe(_:)``): the pushes arrive on ``pushes``.
///
/// **TLS.** With a `rediss://` URL every connection runs through a ``TLSEngine`` made from
/// ``RedisConfiguration/tls`` for the URL's host: the TLS handshake comes between the socket's connect and the
/// machine's `HELLO`, within the same ``RedisConfiguration/connectTimeout``; the ciphertext read from the socket is
/// fed to the engine and the plaintext it yields goes to the machine; commands are encrypted from the outbound
/// buffer as the socket takes the ciphertext. A handshake failure (an untrusted or expired certificate, a wrong
/// host name, a server that is not TLS) is a failed attempt like a refused connect: its reason is the status's
/// `lastError`, and the client retries with backoff.
///
/// **Ownership:** The creator owns it and must ``close()`` it: while it has a socket, its loop's poller retains it.
/// It retains its loop.
///
/// **Thread safety:** Every public method is safe to call from any thread: calls go through a locked inbox that
/// the loop drains, in order. The state machine, the socket and the buffers are confined to the loop's queue.
/// Completions without a queue, ``pushes`` and ``statusUpdates`` are delivered on the loop: they must not block.
public final class RedisConnection: @unchecked Sendable {  // Mutable state is loop-confined or behind `shared`.
    /// What the connection was created with. // Immutable.
    public let configuration: RedisConfiguration
    /// The loop that drives the socket. // Immutable.
    public let loop: EventLoop

    /// What other threads hand the loop, and what they read back.
    private struct Shared {
        var inbox: [Operation] = []
        var drainScheduled = false
        var status = RedisConnectionStatus.connecting
        var metrics = RedisConnectionMetrics()
        var tlsSession: TLSSessionInfo?
    }

    private enum Operation {
        case start
        case send(RedisRequest)
        case close
    }

    private let shared = LockedState(Shared())
    private let pushSubject = PassthroughSubject<RESPPush, Never>()
    private let statusSubject = CurrentValueSubject<RedisConnectionStatus, Never>(.connecting)

    // Loop-confined from here on.
    private var machine: RESPConnectionStateMachine<RedisRequest>
    /// The socket, or -1.
    private var socket: Int32 = -1
    /// Whether the socket's connection is still in progress (waiting for it to become writable).
    private var socketConnecting = false
    /// Counts connection attempts, so a resolution that ends after its attempt was given up is dropped.
    private var attempt: UInt64 = 0
    /// The resolved addresses still to try in this attempt, should the current one refuse.
    private var remainingAddresses: [SocketAddress] = []
    /// Operations handed in on the loop, carried out at the end of the event being handled (or at once when none
    /// is).
    private var localInbox: [Operation] = []
    /// Whether an event is being handled: set at its start, cleared by ``finishEvent()``.
    private var handlingEvent = false
    /// What the poller watches the socket for.
    private var interest = PollInterest()
    /// Encoded commands not yet sent, from `outboundSent` on.
    private var outbound: [UInt8] = []
    private var outboundSent = 0
    private var timer: (any DispatchSourceTimer)?
    /// The instant the timer is set for, nil when unset or fired.
    private var armedDeadline: ContinuousClock.Instant?
    /// Whether the connection has been ready once (a later ready is a reconnect).
    private var everReady = false
    /// The last failure, for ``RedisConnectionStatus/reconnecting(failures:lastError:)``.
    private var lastError = ""
    private var finished = false
    /// The TLS layer of the socket (`rediss://`), made when the socket connects; nil for `redis://` and between
    /// sockets.
    private(set) var tls: RedisTLSLayer?
    /// How many readiness events the poller has reported for the socket: for tests that a socket the connection
    /// cannot read now is not reported over and over (`RedisConnection+Testing.swift`). Relaxed: a counter only.
    let readinessEvents = Atomic<Int>(0)

    /// Creates a connection that does not connect until ``start()``.
    ///
    /// - Parameter seed: Seeds the reconnect jitter; by default random, so replicas that lost Redis together come
    ///   back spread out.
    public init(configuration: RedisConfiguration, loop: EventLoop, seed: UInt64 = UInt64.random(in: .min ... .max)) {
        self.configuration = configuration
        self.loop = loop
        machine = RESPConnectionStateMachine(configuration: configuration.machineConfiguration, seed: seed)
    }

    deinit {
        timer?.cancel()
    }

    // MARK: - Public API

    /// Starts connecting. Commands sent before are queued until the first connection is ready.
    public func start() {
        enqueue(.start)
    }

    /// Closes the connection for good: every command waiting fails with `closed`, later ones too, and the
    /// status becomes ``RedisConnectionStatus/closed``.
    public func close() {
        enqueue(.close)
    }

    /// Sends `command`; its outcome goes to `completion`, on `queue` (or on the loop when nil, where it must not
    /// block).
    public func send(
        _ command: RESPCommand,
        on queue: DispatchQueue? = nil,
        completion: @escaping @Sendable (Result<RESPValue, RedisError>) -> Void
    ) {
        send(command, timeout: configuration.commandTimeout, measured: true, on: queue, completion: completion)
    }

    /// Sends `command` now (the future is eager, like Combine's: it does not wait for a subscriber); the reply, or
    /// the failure, is the future's. The future is fulfilled on the loop.
    public func send(_ command: RESPCommand) -> Future<RESPValue, RedisError> {
        Future { promise in self.send(command) { promise($0) } }
    }

    /// Sends `command` with its own reply `timeout` (nil: none), e.g. a blocking command.
    func send(
        _ command: RESPCommand,
        timeout: Duration?,
        measured: Bool,
        on queue: DispatchQueue?,
        completion: @escaping @Sendable (Result<RESPValue, RedisError>) -> Void
    ) {
        let request = RedisRequest(
            command: command,
            timeout: timeout,
            measured: measured,
            queue: queue,
            completion: completion
        )
        enqueue(.send(request))
    }

    /// The pushes the server sends: pub/sub messages of the subscriptions made with ``subscribe(_:)`` (restored
    /// after every reconnect), and any other out-of-band data. Delivered on the loop; a subscriber without demand
    /// misses them.
    public var pushes: AnyPublisher<RESPPush, Never> { pushSubject.eraseToAnyPublisher() }

    /// The status now (delivered on the subscribing thread), then each change (delivered on the loop). A change to
    /// ``RedisConnectionStatus/connected`` after ``RedisConnectionStatus/reconnecting(failures:lastError:)`` means
    /// the subscriptions are restored and a subscriber may have missed messages meanwhile.
    public var statusUpdates: AnyPublisher<RedisConnectionStatus, Never> { statusSubject.eraseToAnyPublisher() }

    /// The status as of the loop's last event.
    public var status: RedisConnectionStatus { shared.withLock { $0.status } }

    /// The counters as of the loop's last event.
    public var metrics: RedisConnectionMetrics { shared.withLock { $0.metrics } }

    /// What the TLS handshake of the current connection agreed on (protocol, cipher, SNI); nil for `redis://`,
    /// and while no TLS connection is up.
    public var tlsSession: TLSSessionInfo? { shared.withLock { $0.tlsSession } }

    // MARK: - The inbox

    private func enqueue(_ operation: Operation) {
        if loop.inEventLoop {
            // On the loop: no hop. Inside an event (a completion or a push handler calling back) the operation
            // waits for the event's end, so the machine is never entered from its own callbacks; otherwise the
            // operation is an event of its own. Either way in order, behind what a callback queued before.
            if case .send = operation {
                shared.withLock { $0.metrics.commandsSent &+= 1 }
            }
            localInbox.append(operation)
            if !handlingEvent {
                handlingEvent = true
                finishEvent()
            }
            return
        }
        let schedule = shared.withLock { shared -> Bool in
            shared.inbox.append(operation)
            if case .send = operation { shared.metrics.commandsSent &+= 1 }
            guard !shared.drainScheduled else { return false }
            shared.drainScheduled = true
            return true
        }
        if schedule {
            loop.execute { self.drainInbox() }
        }
    }

    /// Carries out what the inbox holds, in order, then sends what it wrote with one `send(2)`.
    private func drainInbox() {
        handlingEvent = true
        let operations = shared.withLock { shared -> [Operation] in
            shared.drainScheduled = false
            let operations = shared.inbox
            shared.inbox = []
            return operations
        }
        let now = ContinuousClock.now
        for operation in operations {
            carryOut(operation, now: now)
        }
        finishEvent()
    }

    /// Carries out one operation handed in through an inbox.
    private func carryOut(_ operation: Operation, now: ContinuousClock.Instant) {
        switch operation {
        case .start:
            if timer == nil && !finished {
                let source = DispatchSource.makeTimerSource(queue: loop.queue)
                source.setEventHandler { [weak self] in self?.timerFired() }
                source.activate()
                timer = source
            }
            perform(machine.start(now: now), now: now)
        case .send(let request):
            guard outbound.count &- outboundSent < configuration.maxOutboundBytes else {
                shared.withLock { $0.metrics.commandsFailed &+= 1 }
                request.complete(.failure(.writeBufferFull(limit: configuration.maxOutboundBytes)))
                return
            }
            let action = machine.send(request.command, context: request, timeout: request.timeout, now: now)
            if case .write = action {
                request.writtenAt = now
            }
            perform(action, now: now)
        case .close:
            perform(machine.close(now: now), now: now)
        }
    }

    // MARK: - Actions

    private func perform(_ action: RESPConnectionStateMachine<RedisRequest>.Action, now: ContinuousClock.Instant) {
        switch action {
        case .none:
            break
        case .connect:
            startConnecting(now: now)
        case .write(let command):
            command.write(into: &outbound)
        case .writeAll(let commands):
            for command in commands { command.write(into: &outbound) }
        case .ready(let commands):
            for command in commands { command.write(into: &outbound) }
            if everReady {
                shared.withLock { $0.metrics.reconnects &+= 1 }
            }
            everReady = true
            // The status says connected before the replies of the queued commands arrive.
            publishStatus()
        case .reply(let request, let value):
            replied(request, value, now: now)
        case .fail(let request, let error):
            shared.withLock { $0.metrics.commandsFailed &+= 1 }
            request.complete(.failure(.connection(error)))
        case .push(let push):
            pushSubject.send(push)
        case .close(let failing, let error, let reconnectAfter):
            // A timeout before the TLS handshake completed: a server that stalls it, or a plain-TCP port (Redis
            // waits for the end of a line that a ClientHello never sends). Said so, for the operator.
            let duringTLSHandshake = tls.map { !$0.handshakeDone } ?? false
            if let layer = tls, layer.failureIsTheHandshakes, error != .closed {
                // Not refused by OpenSSL (that was counted with its reason): the deadline, or the server left
                // before its first reply.
                let reason: String
                if case .connectTimedOut = error {
                    reason = RedisConnectionMetrics.tlsTimeoutReason
                } else {
                    reason = RedisConnectionMetrics.tlsAbandonedReason
                }
                layer.handshakeFailureCounted = true
                shared.withLock { $0.metrics.tlsHandshakeFailures[reason, default: 0] &+= 1 }
            }
            closeSocket()
            if error != .closed {
                lastError = error.description
                if duringTLSHandshake, case .connectTimedOut = error {
                    lastError += ", in the tls handshake (is the port a tls port?)"
                }
            }
            shared.withLock { shared in
                shared.metrics.commandsFailed &+= failing.count
                if error != .closed { shared.metrics.connectionFailures &+= 1 }
            }
            if reconnectAfter == nil, machine.status == .closed {
                finished = true
                timer?.cancel()
                timer = nil
            }
            // The status says reconnecting (or closed) before the failed commands hear of it.
            publishStatus()
            for request in failing {
                request.complete(.failure(.connection(error)))
            }
        }
    }

    private func replied(_ request: RedisRequest, _ value: RESPValue, now: ContinuousClock.Instant) {
        let message = value.withoutAttributes.errorMessage
        let roundTrip = request.measured ? request.writtenAt.map { now - $0 } : nil
        shared.withLock { shared in
            shared.metrics.repliesReceived &+= 1
            if message != nil { shared.metrics.errorReplies &+= 1 }
            if let roundTrip {
                shared.metrics.roundTrips &+= 1
                shared.metrics.roundTripTotal += roundTrip
                shared.metrics.roundTripLast = roundTrip
                shared.metrics.roundTripMax = max(shared.metrics.roundTripMax, roundTrip)
            }
        }
        if let message {
            request.complete(.failure(.server(message)))
        } else {
            request.complete(.success(value))
        }
    }

    /// After every event: carries out what callbacks handed in meanwhile, sends what was written (one `send(2)`
    /// for all), re-arms the timer, publishes the status. Callbacks that keep sending from their own outcomes (a
    /// retry on every failure) are carried on in a later turn after 64 rounds, so the loop's other work runs.
    private func finishEvent() {
        var rounds = 0
        repeat {
            while !localInbox.isEmpty && rounds < 64 {
                rounds &+= 1
                let operations = localInbox
                localInbox = []
                let now = ContinuousClock.now
                for operation in operations {
                    carryOut(operation, now: now)
                }
            }
            flush()
            armTimer()
            publishStatus()
        } while !localInbox.isEmpty && rounds < 64
        if localInbox.isEmpty {
            handlingEvent = false
        } else {
            // Still handling: what is handed in meanwhile queues behind, and this turn goes on later.
            loop.execute { self.finishEvent() }
        }
    }

    private func publishStatus() {
        let status: RedisConnectionStatus
        switch machine.status {
        case .ready:
            status = .connected
        case .closed:
            status = .closed
        case .idle, .connecting, .handshaking:
            status =
                everReady || machine.consecutiveFailures > 0
                ? .reconnecting(failures: machine.consecutiveFailures, lastError: lastError) : .connecting
        case .waitingToReconnect:
            status = .reconnecting(failures: machine.consecutiveFailures, lastError: lastError)
        }
        let changed = shared.withLock { shared -> Bool in
            guard shared.status != status else { return false }
            shared.status = status
            return true
        }
        if changed {
            statusSubject.send(status)
        }
    }

    // MARK: - Timer

    private func armTimer() {
        guard let timer, let deadline = machine.nextDeadline else { return }
        // A later deadline leaves the earlier setting: the timer fires early once, the machine ignores it, and it
        // is set again; so a busy pipeline does not reprogram the timer after every reply.
        if let armed = armedDeadline, armed <= deadline { return }
        armedDeadline = deadline
        let delay = max(.zero, deadline - ContinuousClock.now)
        let (seconds, attoseconds) = delay.components
        let nanoseconds = min(Int64(86_400_000_000_000), seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000)
        timer.schedule(deadline: .now() + .nanoseconds(Int(nanoseconds) &+ 1_000), leeway: .milliseconds(1))
    }

    private func timerFired() {
        handlingEvent = true
        armedDeadline = nil
        let now = ContinuousClock.now
        perform(machine.timerFired(now: now), now: now)
        finishEvent()
    }

    // MARK: - Connecting

    private func startConnecting(now: ContinuousClock.Instant) {
        attempt &+= 1
        remainingAddresses = []
        let url = configuration.url
        if let address = ClientSocket.numericAddress(host: url.host, port: url.port) {
            connect(to: address, now: now)
            return
        }
        // getaddrinfo blocks: off the loop, then back with the first address.
        let current = attempt
        DispatchQueue.global().async {
            let result = ClientSocket.resolve(host: url.host, port: url.port)
            self.loop.execute {
                guard self.attempt == current, self.socket < 0, self.machine.status == .connecting else { return }
                self.handlingEvent = true
                let now = ContinuousClock.now
                switch result {
                case .success(let addresses):
                    self.remainingAddresses = Array(addresses.dropFirst())
                    self.connect(to: addresses[0], now: now)
                case .failure(let failure):
                    self.perform(self.machine.connectionClosed(failure.message, now: now), now: now)
                }
                self.finishEvent()
            }
        }
    }

    private func connect(to address: SocketAddress, now: ContinuousClock.Instant) {
        do {
            let (fd, progress) = try ClientSocket.connect(to: address)
            socket = fd
            socketConnecting = progress == .inProgress
            interest = progress == .inProgress ? PollInterest(writable: true) : readInterest
            try loop.register(fd, SocketReadiness(self), interest: interest)
            if progress == .connected {
                socketConnected(now: now)
            }
        } catch {
            closeSocket()
            if !connectToNextAddress(now: now) {
                perform(machine.connectionClosed("\(error)", now: now), now: now)
            }
        }
    }

    /// Tries the next address a host name resolved to, after the current one failed to connect; false when none is
    /// left.
    private func connectToNextAddress(now: ContinuousClock.Instant) -> Bool {
        guard !remainingAddresses.isEmpty else { return false }
        connect(to: remainingAddresses.removeFirst(), now: now)
        return true
    }

    private var readInterest: PollInterest { PollInterest(readable: true, peerHalfClose: true) }

    private func closeSocket() {
        outbound.removeAll(keepingCapacity: outbound.capacity <= 64 << 10)
        outboundSent = 0
        socketConnecting = false
        if let tls {
            if socket >= 0 { tls.sendCloseNotify(socket) }
            self.tls = nil
            shared.withLock { $0.tlsSession = nil }
        }
        guard socket >= 0 else { return }
        loop.deregister(socket)
        Socket.close(socket)
        socket = -1
    }

    // MARK: - Reading and writing

    /// Reads what the socket holds (at most 16 buffers per event, so the loop's other work gets its turn) and
    /// carries out what it completes.
    private func readAvailable(now: ContinuousClock.Instant) {
        if let tls {
            readAvailableTLS(tls, now: now)
            return
        }
        let buffer = loop.readBuffer
        for _ in 0..<16 {
            let fd = socket
            guard fd >= 0,
                let count = readSocket(fd, into: buffer, closedReason: "the server closed the connection", now: now)
            else { return }
            machine.bytesReceived(UnsafeRawBufferPointer(rebasing: buffer[0..<count]), now: now)
            while socket == fd, let action = machine.nextReceivedAction(now: now) {
                perform(action, now: now)
            }
            if count < buffer.count { return }
        }
    }

    /// One read of `fd` into `buffer`: the byte count, or `nil` when the socket has nothing now or the connection
    /// ended (the machine has been told why: the error, or `closedReason` when the server closed it).
    private func readSocket(
        _ fd: Int32,
        into buffer: UnsafeMutableRawBufferPointer,
        closedReason: String,
        now: ContinuousClock.Instant
    ) -> Int? {
        do {
            switch try Socket.read(fd, into: buffer) {
            case .processed(let count) where count > 0:
                return count
            case .processed:
                perform(machine.connectionClosed(closedReason, now: now), now: now)
            case .wouldBlock:
                break
            }
        } catch {
            perform(machine.connectionClosed("\(error)", now: now), now: now)
        }
        return nil
    }

    /// Sends what is queued; watches for room when the kernel takes only part.
    private func flush() {
        guard socket >= 0, !socketConnecting else { return }
        if let tls {
            flushTLS(tls)
            return
        }
        let fd = socket
        while outboundSent < outbound.count {
            let result = outbound.withUnsafeBytes { bytes -> Result<IOResult<Int>, IOError> in
                do throws(IOError) {
                    return .success(try Socket.send(fd, UnsafeRawBufferPointer(rebasing: bytes[outboundSent...])))
                } catch {
                    return .failure(error)
                }
            }
            switch result {
            case .success(.processed(let sent)):
                outboundSent &+= sent
            case .success(.wouldBlock):
                watch(writable: true)
                return
            case .failure(let error):
                let now = ContinuousClock.now
                perform(machine.connectionClosed("\(error)", now: now), now: now)
                return
            }
        }
        outbound.removeAll(keepingCapacity: outbound.capacity <= 64 << 10)
        outboundSent = 0
        watch(writable: false)
    }

    private func watch(writable: Bool) {
        guard socket >= 0, interest.writable != writable else { return }
        interest.writable = writable
        try? loop.updateInterest(socket, interest)
    }

    private func watch(readable: Bool) {
        guard socket >= 0, interest.readable != readable else { return }
        interest.readable = readable
        try? loop.updateInterest(socket, interest)
    }
}

/// The socket's registration with the loop: hands readiness to its connection, so that the loop's callback is no part
/// of ``RedisConnection``'s public API.
///
/// **Ownership:** Retained by the loop while the socket is registered; retains the connection meanwhile.
///
/// **Thread safety:** Called on the connection's loop only.
private final class SocketReadiness: PollTarget {
    let connection: RedisConnection

    init(_ connection: RedisConnection) { self.connection = connection }

    func pollReady(_ event: PollEvent) { connection.socketReady(event) }
}

extension RedisConnection {
    /// The socket is ready (or failed), as the loop's poller reported it.
    fileprivate func socketReady(_ event: PollEvent) {
        guard event.fd == socket else { return }
        readinessEvents.wrappingAdd(1, ordering: .relaxed)
        handlingEvent = true
        let now = ContinuousClock.now
        if socketConnecting {
            let code = ClientSocket.pendingError(socket)
            if code != 0 {
                closeSocket()
                if connectToNextAddress(now: now) {
                    finishEvent()
                    return
                }
                let reason =
                    "connect to \(configuration.url.host):\(configuration.url.port) failed: "
                    + String(cString: strerror(code))
                perform(machine.connectionClosed(reason, now: now), now: now)
            } else if event.writable {
                socketConnecting = false
                interest = readInterest
                try? loop.updateInterest(socket, interest)
                socketConnected(now: now)
            }
            finishEvent()
            return
        }
        if event.readable || event.peerHalfClosed || event.failed {
            readAvailable(now: now)
        }
        if event.failed && event.fd == socket {
            // An error or hang-up that reading did not end (it would be reported again and again).
            let code = ClientSocket.pendingError(socket)
            let reason = code == 0 ? "the connection hung up" : String(cString: strerror(code))
            perform(machine.connectionClosed(reason, now: now), now: now)
        }
        finishEvent()
    }
}

// MARK: - TLS (rediss://)

extension RedisConnection {
    /// The socket connected: over `redis://` the machine's handshake begins; over `rediss://` the TLS handshake
    /// comes first (the machine hears of the connection when it completes).
    fileprivate func socketConnected(now: ContinuousClock.Instant) {
        guard configuration.url.usesTLS else {
            perform(machine.connected(now: now), now: now)
            return
        }
        guard let context = configuration.tls else {
            perform(
                machine.connectionClosed("rediss:// needs a tls context (RedisConfiguration.tls)", now: now),
                now: now
            )
            return
        }
        let layer: RedisTLSLayer
        do {
            layer = RedisTLSLayer(engine: try context.makeClientEngine(serverName: configuration.url.host))
        } catch {
            perform(machine.connectionClosed("\(error)", now: now), now: now)
            return
        }
        tls = layer
        advanceTLSHandshake(layer, now: now)
    }

    /// Runs the TLS handshake as far as the input allows; its output is sent by ``flush()`` at the event's end.
    private func advanceTLSHandshake(_ layer: RedisTLSLayer, now: ContinuousClock.Instant) {
        switch layer.engine.handshake() {
        case .complete(let session):
            layer.handshakeDone = true
            shared.withLock {
                $0.tlsSession = session
                $0.metrics.tlsHandshakes[session.protocolVersion, default: 0] &+= 1
            }
            perform(machine.connected(now: now), now: now)
            // The server's first bytes may have come with its last handshake flight.
            if tls === layer { decryptTLS(layer, now: now) }
        case .wantInput, .outputFull:
            break
        case .failed(let failure):
            layer.sendPendingOutput(socket)
            layer.handshakeFailureCounted = true
            shared.withLock { $0.metrics.tlsHandshakeFailures[failure.reason.rawValue, default: 0] &+= 1 }
            let reason =
                "tls handshake with \(configuration.url.host):\(configuration.url.port) failed: \(failure)"
            perform(machine.connectionClosed(reason, now: now), now: now)
        }
    }

    /// Reads ciphertext (at most 16 buffers, each at most what the engine takes) into the engine, and carries on
    /// the handshake or decrypts.
    private func readAvailableTLS(_ layer: RedisTLSLayer, now: ContinuousClock.Instant) {
        let buffer = loop.readBuffer
        for _ in 0..<16 {
            let fd = socket
            guard fd >= 0, tls === layer else { return }
            // Zero only while decryption waits for the engine's output to drain (see `decryptTLS`): the socket is
            // not watched for reading meanwhile (the poller is level-triggered: it would report it again and again),
            // until `flushTLS` has sent the output and decrypted the rest.
            let capacity = min(buffer.count, layer.engine.inputCapacity)
            guard capacity > 0 else {
                watch(readable: false)
                return
            }
            let closedReason =
                layer.handshakeDone
                ? "the server closed the connection"
                : "the server closed the connection during the tls handshake (is it a tls port?)"
            let room = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<capacity])
            guard let count = readSocket(fd, into: room, closedReason: closedReason, now: now) else { return }
            layer.engine.feed(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            if layer.handshakeDone {
                decryptTLS(layer, now: now)
            } else {
                advanceTLSHandshake(layer, now: now)
            }
            if count < capacity { return }
        }
    }

    /// Hands every byte of plaintext the engine can decrypt now to the machine. Stops early only when the engine's
    /// output is full (the server does not read); ``flushTLS(_:)`` resumes it once the output drained.
    private func decryptTLS(_ layer: RedisTLSLayer, now: ContinuousClock.Instant) {
        let buffer = loop.readBuffer
        let fd = socket
        layer.inputStalled = false
        while socket == fd, tls === layer {
            switch layer.engine.read(into: buffer) {
            case .bytes(let count):
                guard count > 0 else { return }
                layer.receivedPlaintext = true
                machine.bytesReceived(UnsafeRawBufferPointer(rebasing: buffer[0..<count]), now: now)
                while socket == fd, let action = machine.nextReceivedAction(now: now) {
                    perform(action, now: now)
                }
            case .wantInput:
                return
            case .outputFull:
                layer.inputStalled = true
                return
            case .closed:
                perform(machine.connectionClosed("the server closed the tls connection", now: now), now: now)
                return
            case .failed(let failure):
                layer.sendPendingOutput(fd)
                if layer.failureIsTheHandshakes {
                    // Refused before its first reply: TLS 1.3's verdict on our certificate comes after our side of
                    // the handshake completed.
                    layer.handshakeFailureCounted = true
                    shared.withLock { $0.metrics.tlsHandshakeFailures[failure.reason.rawValue, default: 0] &+= 1 }
                }
                perform(machine.connectionClosed("\(failure)", now: now), now: now)
                return
            }
        }
    }

    /// Sends the ciphertext waiting (what the kernel refused before first), encrypting the outbound buffer into the
    /// engine as it drains, until everything is sent or the kernel takes no more (then it watches for room).
    private func flushTLS(_ layer: RedisTLSLayer) {
        let fd = socket
        let buffer = loop.readBuffer
        do {
            while true {
                if layer.unsentOffset < layer.unsent.count {
                    let result = try layer.unsent.withUnsafeBytes { bytes throws(IOError) in
                        try Socket.send(fd, UnsafeRawBufferPointer(rebasing: bytes[layer.unsentOffset...]))
                    }
                    if case .processed(let count) = result { layer.unsentOffset &+= count }
                    guard layer.unsentOffset == layer.unsent.count else {
                        watch(writable: true)
                        return
                    }
                    layer.unsent = []
                    layer.unsentOffset = 0
                }
                if layer.handshakeDone, outboundSent < outbound.count {
                    let result = outbound.withUnsafeBytes {
                        layer.engine.write(UnsafeRawBufferPointer(rebasing: $0[outboundSent...]))
                    }
                    switch result {
                    case .wrote(let count):
                        outboundSent &+= count
                    case .wantInput, .outputFull:
                        break
                    case .failed(let failure):
                        let now = ContinuousClock.now
                        perform(machine.connectionClosed("\(failure)", now: now), now: now)
                        return
                    }
                }
                let taken = layer.engine.takeOutput(into: buffer)
                guard taken > 0 else { break }
                let result = try Socket.send(fd, UnsafeRawBufferPointer(rebasing: buffer[0..<taken]))
                var sent = 0
                if case .processed(let count) = result { sent = count }
                if sent < taken {
                    layer.unsent = Array(buffer[sent..<taken])
                    watch(writable: true)
                    return
                }
            }
        } catch {
            let now = ContinuousClock.now
            perform(machine.connectionClosed("\(error)", now: now), now: now)
            return
        }
        if outboundSent == outbound.count {
            outbound.removeAll(keepingCapacity: outbound.capacity <= 64 << 10)
            outboundSent = 0
        }
        watch(writable: false)
        if layer.inputStalled {
            // Decryption stopped on a full output, which is sent now; no socket event would announce the rest.
            loop.execute { [self] in
                guard let layer = tls, layer.inputStalled else { return }
                handlingEvent = true
                decryptTLS(layer, now: ContinuousClock.now)
                if tls === layer, !layer.inputStalled { watch(readable: true) }
                finishEvent()
            }
        }
    }
}
