import EventLoops
import Glibc
import TestSupport
import Testing

@testable import HTTPServer

/// What a stream keeps in user space once its reader stops reading (see `Connection.updateHighWatermark`).
@Suite(.offPool) struct StalledStreamMemoryTests {
    /// A reader whose window closes after 64 KiB: the stream first ramps up (the kernel takes whole batches
    /// while the window is open), then fills the kernel's send buffer, then the send comes back short.
    @Test func aStalledStreamKeepsOneSmallBatchAndLeavesNoResidentSpare() throws {
        let total = 12 * 1024 * 1024
        let stalled = TestSignal()
        let observed = TestBox<(capacity: Int, queued: Int, spare: Int, spareResident: Int)?>(nil)
        let server = try TestServer(handler: { _, responder in
            let writer = responder.startStreaming()
            let sent = TestBox(0)
            let pattern = [UInt8](repeating: UInt8(ascii: "x"), count: 1024)
            @Sendable func pump() {
                while writer.isWritable, sent.value < total {
                    writer.write(pattern)
                    sent.update { $0 += pattern.count }
                }
                if sent.value >= total {
                    writer.finish()
                } else if observed.value == nil {
                    // The write that made the writer not writable flushed, and the kernel refused bytes.
                    let storage = writer.outboundStorage
                    let spare = writer.loop.spareStorageBytes
                    observed.update { $0 = (storage.capacity, storage.queued, spare.capacity, spare.resident) }
                    stalled.signal()
                }
            }
            writer.onWritable = { pump() }
            pump()
        })
        defer { server.stop() }
        let client = try server.connect(receiveBufferBytes: 64 * 1024)
        try client.sendGet("/stream")
        #expect(stalled.wait(timeout: .seconds(30)))
        let seen = try #require(observed.value)
        #expect(seen.queued > 0)
        // Only what is queued (rounded up to the buffer's 64-byte granule), not a batch sized for a reader
        // that keeps up (16 KiB + 4 KiB), nor the next doubling of it.
        #expect(seen.capacity <= max(seen.queued, OutboundBuffer.minimumAllocation) + 63)
        // The storage the stall left behind is kept as the loop's spare, but none of its pages are resident.
        #expect(seen.spareResident == 0)
        let response = try client.readResponse(timeout: .seconds(60))
        #expect(response.body.count == total)
        try server.expectHealthy()
    }

    /// A stalled reader pins at most the capped kernel send buffer (``Server/Configuration/streamSendBufferBytes``),
    /// not the megabytes autotuning grows it to for a fast writer.
    @Test func aStalledStreamPinsAtMostTheCappedKernelSendBuffer() throws {
        let cap = 64 * 1024
        let stalled = TestSignal()
        let observed = TestBox<(sendBuffer: Int, queued: Int)?>(nil)
        let server = try TestServer(
            configuration: { $0.streamSendBufferBytes = cap },
            handler: { _, responder in
                let writer = responder.startStreaming()
                let pattern = [UInt8](repeating: UInt8(ascii: "x"), count: 1024)
                let written = TestBox(0)
                @Sendable func pump() {
                    // Far more than any autotuned buffer takes, so the writer stops on a full kernel buffer.
                    while writer.isWritable, written.value < 64 * 1024 * 1024 {
                        writer.write(pattern)
                        written.update { $0 += pattern.count }
                    }
                    guard observed.value == nil, !writer.isWritable, writer.isOpen else { return }
                    let fd = writer.connection.fd
                    var queued: Int32 = 0
                    _ = ioctl(fd, 0x5411, &queued)  // SIOCOUTQ: bytes in the kernel send queue
                    let seen = (sendBuffer: Socket.sendBufferBytes(fd) ?? -1, queued: Int(queued))
                    observed.update { $0 = seen }
                    stalled.signal()
                }
                writer.onWritable = { pump() }
                pump()
            }
        )
        defer { server.stop() }
        let client = try server.connect(receiveBufferBytes: 64 * 1024)
        try client.sendGet("/stream")
        #expect(stalled.wait(timeout: .seconds(30)))
        let seen = try #require(observed.value)
        #expect(seen.sendBuffer == 2 * cap, "the kernel books twice what was set")
        #expect(seen.queued > 0)
        // The kernel checks the buffer before it queues a segment, so it may go over by one (64 KiB at most).
        #expect(seen.queued <= 2 * cap + 64 * 1024, "queued \(seen.queued) bytes in the kernel")
        client.close()
        try server.expectHealthy()
    }
}
