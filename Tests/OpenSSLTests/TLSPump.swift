import OpenSSL

/// Moves ciphertext between a client and a server ``TLSEngine`` in memory: the wire of the engine tests.
///
/// **Ownership:** A namespace of functions over engines the test owns.
/// **Thread safety:** Used on the test's thread only.
enum TLSPump {
    /// Moves what `source` has to send into `destination`, as far as `destination` takes; returns the byte count.
    @discardableResult
    static func transfer(from source: TLSEngine, to destination: TLSEngine) -> Int {
        var moved = 0
        while source.pendingOutputCount > 0 && destination.inputCapacity > 0 {
            let bytes = source.takeOutput(maxCount: destination.inputCapacity)
            guard !bytes.isEmpty else { break }
            let taken = destination.feed(bytes)
            precondition(taken == bytes.count, "the destination took less than its capacity")
            moved += taken
        }
        return moved
    }

    /// Runs both handshakes, moving their flights across, until neither can go further (both complete, one
    /// failed, or nothing moves); at most 20 rounds.
    static func handshake(
        client: TLSEngine,
        server: TLSEngine
    ) -> (client: TLSEngine.HandshakeResult, server: TLSEngine.HandshakeResult) {
        var clientResult = client.handshake()
        var serverResult = server.handshake()
        for _ in 0..<20 {
            let moved = transfer(from: client, to: server) + transfer(from: server, to: client)
            serverResult = server.handshake()
            transfer(from: server, to: client)
            clientResult = client.handshake()
            transfer(from: client, to: server)
            serverResult = server.handshake()
            if case .complete = clientResult, case .complete = serverResult { break }
            if moved == 0 && client.pendingOutputCount == 0 && server.pendingOutputCount == 0 { break }
        }
        return (clientResult, serverResult)
    }

    /// Sends `bytes` from `sender` to `receiver` through both engines; returns what the receiver read (stopping
    /// early if either fails or the receiver reads an end).
    static func send(_ bytes: [UInt8], from sender: TLSEngine, to receiver: TLSEngine) -> [UInt8] {
        var offset = 0
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var idleRounds = 0
        while received.count < bytes.count && idleRounds < 3 {
            var progressed = false
            if offset < bytes.count {
                switch sender.write(bytes[offset...]) {
                case .wrote(let count):
                    offset += count
                    progressed = count > 0
                case .failed:
                    return received
                case .wantInput, .outputFull:
                    break
                }
            }
            if transfer(from: sender, to: receiver) > 0 { progressed = true }
            reading: while true {
                let result = buffer.withUnsafeMutableBytes { receiver.read(into: $0) }
                switch result {
                case .bytes(let count):
                    received.append(contentsOf: buffer[..<count])
                    progressed = true
                case .wantInput, .outputFull:
                    break reading
                case .closed, .failed:
                    return received
                }
            }
            transfer(from: receiver, to: sender)
            idleRounds = progressed ? 0 : idleRounds + 1
        }
        return received
    }
}
