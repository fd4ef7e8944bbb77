import Dispatch
import EventLoops

/// Connections the accept loop answered itself (`503`) and is waiting to close.
///
/// Closing a socket whose peer's request has not been read yet makes the kernel send a reset, and a reset
/// that reaches the client before it reads the `503` discards the answer (RFC 9112 §9.6 calls for this
/// "lingering close"). So a rejected connection is shut for writing and kept until the client closes its side
/// (reading and dropping whatever it sends) or ``deadline`` passes; at most ``capacity`` linger at once, and
/// beyond that one is closed at once as before. Accept-loop-confined.
struct LingeringClose {
    /// Longest a rejected connection is kept open for its peer to read the answer.
    static let deadline: DispatchTimeInterval = .seconds(2)
    /// Most rejected connections kept at once; they hold descriptors, which is what ran out.
    static let capacity = 64

    private var sources: [Int32: any DispatchSourceRead] = [:]

    /// The number of connections lingering now.
    var count: Int { sources.count }

    /// Keeps `fd` (already answered and shut for writing) until its peer closes or the deadline passes, then
    /// closes it and calls `closed` on `queue`; closes it at once when ``capacity`` connections linger already.
    mutating func linger(_ fd: Int32, on queue: DispatchQueue, closed: @escaping () -> Void) -> Bool {
        guard sources.count < Self.capacity, sources[fd] == nil else {
            Socket.close(fd)
            return false
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        // Strong captures: cancelling the source releases its handlers, and the deadline's closure runs once.
        let handle = SourceHandle(source)
        source.setEventHandler {
            if !Self.drain(fd) { handle.source.cancel() }
        }
        source.setCancelHandler {
            Socket.close(fd)
            closed()
        }
        sources[fd] = source
        source.activate()
        queue.asyncAfter(deadline: .now() + Self.deadline) { handle.source.cancel() }
        return true
    }

    /// Forgets `fd` once its source was cancelled (call from `closed`).
    mutating func forget(_ fd: Int32) {
        sources[fd] = nil
    }

    /// Closes every lingering connection (at shutdown).
    mutating func closeAll() {
        for source in sources.values { source.cancel() }
    }

    /// Reads and drops what the peer sent. - Returns: Whether the connection is still open (no EOF or error).
    private static func drain(_ fd: Int32) -> Bool {
        withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 16) { buffer in
            for _ in 0..<16 {
                switch try? Socket.read(fd, into: buffer) {
                case .processed(let count)? where count > 0: continue
                case .wouldBlock?: return true
                default: return false  // EOF or an error: the peer is gone.
                }
            }
            return true
        }
    }
}

/// A dispatch source handed to closures on the queue it is confined to.
private final class SourceHandle: @unchecked Sendable {
    let source: any DispatchSourceRead
    init(_ source: any DispatchSourceRead) { self.source = source }
}
