import EventLoops
import OpenSSL

/// A connection's TLS layer (``Server/Configuration/tls``): its ``TLSEngine``, the ciphertext the kernel has not
/// taken yet, and the handshake's deadline.
///
/// The engine sits between the socket and the connection's buffers: ciphertext read from the socket is fed to it
/// and the plaintext it yields goes into the parser; the outbound buffer (plaintext responses, streamed bodies)
/// is encrypted into it when the connection flushes, and its output is sent on the socket. The ciphertext waiting
/// in the engine and in ``unsent`` counts as the connection's buffered output, so a stream's writability and the
/// write-stall deadline see the bytes that TLS has not sent yet.
///
/// **Ownership:** Owned by its ``Connection`` for the connection's life.
///
/// **Thread safety:** Confined to the connection's loop, like the connection.
final class TLSLayer {
    /// The TLS connection, made from the context that was ``TLSReloadableContext/current`` at accept.
    let engine: TLSEngine
    /// When the handshake must have completed (monotonic ns).
    let handshakeDeadline: UInt64
    /// Whether the handshake completed.
    var handshakeDone = false
    /// Whether the handshake's end (completed, failed, timed out) was reported to
    /// ``Server/Configuration/tlsEvents``; a connection that closes without it reports it abandoned.
    var handshakeReported = false
    /// Whether plaintext was left undecrypted because the engine's output was full (the peer does not read); it is
    /// decrypted once the output has drained, since no socket event would announce it.
    var inputStalled = false
    /// Ciphertext taken from the engine that the kernel refused: sent before anything else. Empty (no storage)
    /// while the peer keeps up, so an idle TLS connection holds no buffer of its own here.
    var unsent: [UInt8] = []
    /// How much of ``unsent`` has been sent.
    var unsentOffset = 0

    init(engine: TLSEngine, handshakeDeadline: UInt64) {
        self.engine = engine
        self.handshakeDeadline = handshakeDeadline
    }

    /// The ciphertext made and not yet taken by the kernel.
    var pendingCount: Int {
        (unsent.count - unsentOffset) + engine.pendingOutputCount
    }
}

/// TLS: reading ciphertext into the engine and plaintext into the parser, encrypting and sending the outbound
/// buffer, the handshake's deadline and failures. Only connections of a server with
/// ``Server/Configuration/tls`` take these paths (one branch on ``Connection/tls`` in `readable()` and `flush()`).
extension Connection {
    /// The answer to plain HTTP sent to the TLS port, in clear, before the connection closes.
    static let plaintextHTTPResponse: [UInt8] = {
        let body = "This port speaks HTTPS: use https:// here.\n"
        let head =
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        return Array((head + body).utf8)
    }()

    /// The socket is readable on a TLS connection: ciphertext into the engine, then the handshake or the
    /// plaintext into the parser.
    func readableTLS(_ tls: TLSLayer) {
        defer { if !machine.isClosed { updateInterest() } }
        let buffer = loop.readBuffer
        let capacity = min(buffer.count, tls.engine.inputCapacity)
        guard capacity > 0 else { return }
        guard let count = readSocket(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<capacity])) else {
            return
        }
        tls.engine.feed(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        if !tls.handshakeDone {
            switch tls.engine.handshake() {
            case .complete(let session):
                tls.handshakeDone = true
                tls.handshakeReported = true
                context.configuration.tlsEvents?(.handshakeCompleted(session))
            case .wantInput, .outputFull:
                flush()
                return
            case .failed(let failure):
                tlsFailed(tls, failure)
                return
            }
        }
        machine.bytesRead(now: SystemEnvironment.monotonicNanoseconds())
        decryptInput(tls)
    }

    /// Moves every byte of plaintext the engine can decrypt now into the parser (at most what one read fed it),
    /// then parses and flushes. Nothing is left decrypted-but-unread inside OpenSSL, since no socket event would
    /// announce it; only when the engine's output is full (the peer does not read) does it stop, and
    /// ``flush(notifiesWriter:)`` resumes it once the output drained.
    func decryptInput(_ tls: TLSLayer) {
        let buffer = loop.readBuffer
        var decrypted = 0
        var peerClosed = false
        reading: while true {
            switch tls.engine.read(into: buffer) {
            case .bytes(let count):
                guard count > 0 else { break reading }
                parser.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                decrypted += count
            case .wantInput:
                break reading
            case .outputFull:
                tls.inputStalled = true
                break reading
            case .closed:
                peerClosed = true
                break reading
            case .failed(let failure):
                tlsFailed(tls, failure)
                return
            }
        }
        if decrypted > 0 { processBufferedRequests() }
        // The peer's close_notify: like end of file, noticed while a request is being read; a request already
        // delivered is answered first (the peer's FIN, which follows, then closes as on a plain connection).
        if peerClosed, machine.wantsToRead, !machine.isLingering {
            handle(machine.peerClosed())
            return
        }
        flush()
    }

    /// Sends the ciphertext waiting (what the kernel refused before first), encrypting the outbound buffer into the
    /// engine as it drains, until everything is sent or the kernel takes no more. Returns the bytes the kernel
    /// took, or nil when the connection closed.
    func sendTLS(_ tls: TLSLayer) -> Int? {
        var sent = 0
        do {
            while true {
                if tls.unsentOffset < tls.unsent.count {
                    let result = try tls.unsent.withUnsafeBytes { bytes throws(IOError) in
                        try Socket.send(fd, UnsafeRawBufferPointer(rebasing: bytes[tls.unsentOffset...]))
                    }
                    guard case .processed(let count) = result else { return sent }
                    sent += count
                    tls.unsentOffset += count
                    guard tls.unsentOffset == tls.unsent.count else { return sent }
                    tls.unsent = []
                    tls.unsentOffset = 0
                }
                if tls.handshakeDone, !outbound.isEmpty {
                    switch tls.engine.write(outbound.readableBytes) {
                    case .wrote(let count):
                        outbound.consume(count)
                    case .wantInput, .outputFull:
                        break
                    case .failed:
                        handle(machine.mustClose())
                        return nil
                    }
                }
                let buffer = loop.readBuffer
                let taken = tls.engine.takeOutput(into: buffer)
                guard taken > 0 else { return sent }
                let result = try Socket.send(fd, UnsafeRawBufferPointer(rebasing: buffer[0..<taken]))
                let count: Int
                if case .processed(let accepted) = result { count = accepted } else { count = 0 }
                sent += count
                if count < taken {
                    tls.unsent = Array(buffer[count..<taken])
                    return sent
                }
            }
        } catch {
            handle(machine.mustClose())
            return nil
        }
    }

    /// After a flush: decrypts the input left when the engine's output was full, once it has room again.
    func resumeStalledInput(_ tls: TLSLayer) {
        guard tls.inputStalled, tls.engine.pendingOutputCount < tls.engine.limits.maxBufferedOutput,
            machine.wantsToRead, !holdsNextRequest
        else { return }
        tls.inputStalled = false
        loop.execute { [self] in
            guard !machine.isClosed, let tls = self.tls else { return }
            decryptInput(tls)
        }
    }

    /// The handshake or the connection failed: plain HTTP gets a `400` in clear; anything else gets the engine's
    /// alert, best effort; then the connection closes.
    func tlsFailed(_ tls: TLSLayer, _ failure: TLSFailure) {
        if !tls.handshakeReported {
            tls.handshakeReported = true
            context.configuration.tlsEvents?(.handshakeFailed(failure))
        }
        if failure.reason == .plaintextHTTP, !tls.handshakeDone {
            _ = Connection.plaintextHTTPResponse.withUnsafeBytes { try? Socket.send(fd, $0) }
        } else {
            let alert = tls.engine.takeOutput()
            if !alert.isEmpty { _ = alert.withUnsafeBytes { try? Socket.send(fd, $0) } }
        }
        handle(machine.mustClose())
    }

    /// The TLS handshake's deadline, checked by the loop's coarse timer; true when it closed the connection.
    func tlsHandshakeExpired(_ tls: TLSLayer, now: UInt64) -> Bool {
        guard !tls.handshakeDone, now >= tls.handshakeDeadline else { return false }
        tls.handshakeReported = true
        context.configuration.tlsEvents?(.handshakeTimedOut)
        handle(machine.mustClose())
        return true
    }

    /// The connection closed: a handshake not reported yet was abandoned; an established session ended.
    func tlsClosed(_ tls: TLSLayer) {
        if !tls.handshakeReported {
            tls.handshakeReported = true
            context.configuration.tlsEvents?(.handshakeAbandoned)
        } else if tls.handshakeDone, let session = tls.engine.session {
            context.configuration.tlsEvents?(.connectionClosed(session))
        }
    }

    /// Our close_notify before the write side closes, best effort (what the kernel refuses is dropped).
    func sendCloseNotify(_ tls: TLSLayer) {
        guard tls.handshakeDone, !tls.engine.sentCloseNotify, tls.unsentOffset == tls.unsent.count else { return }
        switch tls.engine.shutdown() {
        case .sent, .complete:
            let output = tls.engine.takeOutput()
            if !output.isEmpty { _ = output.withUnsafeBytes { try? Socket.send(fd, $0) } }
        case .failed:
            break
        }
    }
}
