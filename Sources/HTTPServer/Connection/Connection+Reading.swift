import EventLoops
/// Reading: bytes from the socket into the parser, parser events into the machine, complete requests to
/// the handler. Pipelined requests wait in the parser while a response is pending (reads pause then), and
/// while more than ``Connection/pipelineBacklogBytes`` of the last one are still unsent.
extension Connection {
    /// How many bytes of answers may wait in the outbound buffer before the next pipelined request is read.
    ///
    /// A client may pipeline requests and never read the answers: each answer then stays in the outbound
    /// buffer, and without this bound the connection would go on parsing and answering, its buffer growing by
    /// a whole answer per request for as long as the client sends (a few bytes of request per large answer).
    /// Past this many unsent bytes the connection stops reading and parsing; it resumes once the socket has
    /// taken enough (``flush(notifiesWriter:)``). Small answers still pipeline freely.
    static let pipelineBacklogBytes = 64 * 1024

    /// Whether the next request waits for the socket to take the answers queued before it: the connection is
    /// between requests and more than ``pipelineBacklogBytes`` are unsent.
    var holdsNextRequest: Bool {
        outbound.count > Connection.pipelineBacklogBytes && machine.isIdle
    }

    func readable() {
        guard machine.wantsToRead, !holdsNextRequest else { return }
        if let tls {
            readableTLS(tls)
            return
        }
        defer { updateInterest() }
        let buffer = loop.readBuffer
        guard let count = readSocket(into: buffer) else { return }
        machine.bytesRead(now: SystemEnvironment.monotonicNanoseconds())
        parser.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        processBufferedRequests()
        flush()
    }

    /// Reads what the socket has into `buffer`, plain or TLS: the count of bytes to process, or nil when there is
    /// none to (it would block; the peer closed or the read failed, and the machine was told; or the connection
    /// lingers, discarding input until the peer closes).
    @inline(__always)
    func readSocket(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let count: Int
        do {
            switch try Socket.read(fd, into: buffer) {
            case .wouldBlock:
                return nil
            case .processed(let read):
                count = read
            }
        } catch {
            handle(machine.mustClose())
            return nil
        }
        if count == 0 {
            handle(machine.peerClosed())
            return nil
        }
        return machine.isLingering ? nil : count
    }

    /// Pulls parser events and delivers requests until the parser needs more bytes or a response is pending.
    func processBufferedRequests() {
        let outerPhase = phase
        phase = .parsing
        defer { if case .parsing = phase { phase = outerPhase } }
        while machine.isReadingRequest {
            if holdsNextRequest {
                context.pipelineHolds &+= 1
                return
            }
            if machine.isIdle && parser.bufferedByteCount > 0 {
                machine.requestBytesBuffered(now: SystemEnvironment.monotonicNanoseconds())
            }
            let event: ParseEvent
            do {
                event = try parser.next()
            } catch {
                handle(machine.parseFailed(error.status, reason: error.description))
                return
            }
            switch consume event {
            case .needMoreData:
                return
            case .head(let head):
                let method = head.method
                let version = head.version
                let keepAlive = head.keepAlive
                let expectsContinue = head.expectsContinue
                if isReserve, !(context.configuration.reserveConnectionAllows?(head) ?? false) {
                    // The connection is in the probe reserve, and this is not a probe: refused before its body.
                    handle(machine.requestRefused(.serviceUnavailable, reason: "too many connections"))
                    return
                }
                // Moved, not copied: a copy retains and releases each of the head's strings and arrays.
                requestHead = consume head
                handle(
                    machine.headReceived(
                        isSupportedMethod: method == .get || context.configuration.supportedMethods.contains(method),
                        method: method,
                        isHead: method == .head,
                        version: version,
                        keepAlive: keepAlive,
                        expectsContinue: expectsContinue,
                        now: SystemEnvironment.monotonicNanoseconds(),
                        allowance: { bodyAllowance(for: requestHead) }
                    )
                )
            case .body(let bytes):
                let now = SystemEnvironment.monotonicNanoseconds()
                let action = machine.bodyReceived(bytes.count, now: now) {
                    bodyAllowance(for: requestHead)
                }
                guard action == .none else {
                    handle(action)
                    return
                }
                if requestBody.isEmpty { requestBody = Array(bytes) } else { requestBody.append(contentsOf: bytes) }
            case .end:
                handle(machine.requestEnded())
            }
        }
    }

    /// How many body bytes the request of `head` may have: what the server's policy says
    /// (``Server/Configuration/requestBodyLimit``), within the parser's limit.
    private func bodyAllowance(for head: RequestHead?) -> ConnectionStateMachine<BodyWriter>.BodyAllowance {
        let configuration = context.configuration
        let parserLimit = configuration.parser.maxBodyBytes
        guard let head else { return .init(limit: parserLimit, declared: nil) }
        let limit = configuration.requestBodyLimit.map { min(max(0, $0(head)), parserLimit) } ?? parserLimit
        return .init(limit: limit, declared: head.headers["content-length"].flatMap { Int($0) })
    }

    /// Hands the complete request to the handler; the one place a ``Request`` is built.
    func deliverRequest() {
        // Taken out of the connection, not copied (a copy retains and releases each of the head's strings).
        guard let head = requestHead.take() else {
            preconditionFailure("internal inconsistency: request without head")
        }
        let body = requestBody
        requestBody = []
        requestID &+= 1
        // The handler takes the request (its parameter is `consuming`): built here, moved there.
        context.handler(
            Request(head: head, body: body, remoteAddress: remoteAddress),
            Responder(connection: self, requestID: requestID)
        )
    }
}
