import EventLoops
import HTTPServer
import TestSupport
import Testing

@Suite(.offPool) struct StreamingTests {
    @Test func streamedBodyIsChunkedAndTheConnectionIsKeptAlive() throws {
        let server = try TestServer { _, responder in
            let writer = responder.startStreaming(headers: ["Content-Type": "text/event-stream"])
            writer.write("id: 0\n")
            writer.write(Array("data: 0\n\n".utf8))
            writer.withAppendBuffer { buffer in
                buffer.append("id: ")
                buffer.appendDecimal(1)
                buffer.append("\n")
            }
            writer.loop.execute {
                writer.write("data: 1\n\n")
                writer.finish()
            }
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/stream")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.header("transfer-encoding") == "chunked")
        #expect(response.header("content-type") == "text/event-stream")
        #expect(response.text == "id: 0\ndata: 0\n\nid: 1\ndata: 1\n\n")
        try client.sendGet("/health")
        #expect(try client.readResponse().text == "ok")
        try server.expectHealthy()
    }

    @Test func abortSendsWhatIsBufferedThenClosesWithoutTheLastChunk() throws {
        let closed = TestSignal()
        let server = try TestServer { _, responder in
            let writer = responder.startStreaming()
            writer.onClose = { closed.signal() }
            writer.write("partial")
            writer.abort()
            #expect(!writer.isOpen)
            writer.write("ignored")
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/stream")
        let bytes = try client.readUntilClosed()
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("transfer-encoding: chunked") || text.contains("Transfer-Encoding: chunked"))
        #expect(text.hasSuffix("7\r\npartial\r\n"))
        #expect(!text.contains("ignored"))
        #expect(closed.wait(timeout: .seconds(5)))
        try server.expectHealthy()
    }

    @Test func writesWithinOneLoopTurnLeaveAsOneChunk() throws {
        let server = try TestServer { _, responder in
            let writer = responder.startStreaming()
            for index in 0..<100 { writer.write("\(index % 10)") }
            writer.loop.execute { writer.finish() }
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/stream")
        _ = try client.readResponse(isHead: true)  // the head alone; then the chunks by hand
        #expect(try client.readChunk().count == 100)
        #expect(try client.readChunk().isEmpty)
        try server.expectHealthy()
    }

    @Test func slowReaderTurnsWritabilityOffAndOnAgain() throws {
        let total = 4 * 1024 * 1024
        let becameUnwritable = TestSignal()
        let edges = TestBox(0)
        let server = try TestServer(
            configuration: {
                $0.highWatermarkBytes = 64 * 1024
                $0.minimumHighWatermarkBytes = 4 * 1024
                $0.lowWatermarkBytes = 1024
            },
            handler: { _, responder in
                let writer = responder.startStreaming()
                let sent = TestBox(0)
                let pattern = [UInt8](repeating: UInt8(ascii: "x"), count: 1024)
                @Sendable func pump() {
                    while writer.isWritable, sent.value < total {
                        #expect(writer.writableBytes > 0)
                        writer.write(pattern)
                        sent.update { $0 += pattern.count }
                    }
                    if sent.value >= total {
                        writer.finish()
                    } else {
                        #expect(writer.writableBytes == 0 || !writer.isWritable)
                        becameUnwritable.signal()
                    }
                }
                writer.onWritable = {
                    edges.update { $0 += 1 }
                    pump()
                }
                pump()
            }
        )
        defer { server.stop() }
        let client = try server.connect(receiveBufferBytes: 4096)
        try client.sendGet("/stream")
        // Reading nothing, the server must hit its high watermark rather than buffer 4 MiB.
        #expect(becameUnwritable.wait())
        let response = try client.readResponse(timeout: .seconds(30))
        #expect(response.body.count == total)
        #expect(edges.value > 0)
        try server.expectHealthy()
    }

    @Test func peerCloseFiresOnCloseExactlyOnce() throws {
        let closed = TestSignal()
        let started = TestSignal()
        let closeCount = TestBox(0)
        let held = TestBox<[BodyWriter]>([])
        let server = try TestServer { _, responder in
            let writer = responder.startStreaming()
            held.update { $0.append(writer) }
            writer.onClose = {
                closeCount.update { $0 += 1 }
                closed.signal()
            }
            writer.write("first frame\n")
            started.signal()
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/stream")
        #expect(started.wait())
        _ = try client.readResponse(isHead: true)
        #expect(try client.readChunk() == Array("first frame\n".utf8))
        client.close()
        #expect(closed.wait())
        // After the close, writes and finish are inert and onClose does not fire again.
        let checked = TestSignal()
        let writer = held.value[0]
        writer.loop.execute {
            writer.write("ignored")
            writer.finish()
            #expect(!writer.isOpen)
            #expect(!writer.isWritable)
            checked.signal()
        }
        #expect(checked.wait())
        #expect(closeCount.value == 1)
        try server.expectHealthy()
    }

    @Test func finishFiresOnCloseOnce() throws {
        let closeCount = TestBox(0)
        let finished = TestSignal()
        let server = try TestServer { _, responder in
            let writer = responder.startStreaming()
            writer.onClose = {
                closeCount.update { $0 += 1 }
                finished.signal()
            }
            writer.write("x")
            writer.finish()
            writer.finish()
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/stream")
        #expect(try client.readResponse().text == "x")
        #expect(finished.wait())
        #expect(closeCount.value == 1)
        try server.expectHealthy()
    }

    @Test func aWriterOfAFinishedStreamCannotTouchTheNextOneOnItsConnection() throws {
        let held = TestBox<[BodyWriter]>([])
        let checked = TestSignal()
        let server = try TestServer { request, responder in
            let writer = responder.startStreaming()
            held.update { $0.append(writer) }
            if request.path == "/first" {
                writer.write("one")
                writer.finish()
            } else {
                let first = held.value[0]
                // The first stream's writer asks the connection, which streams for the second one now.
                #expect(!first.isOpen)
                #expect(!first.isWritable)
                #expect(first.writableBytes == 0)
                first.write("stale")
                first.finish()
                first.abort()
                #expect(writer.isOpen)
                writer.write("two")
                writer.finish()
                checked.signal()
            }
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/first")
        #expect(try client.readResponse().text == "one")
        try client.sendGet("/second")
        #expect(try client.readResponse().text == "two")
        #expect(checked.wait())
        try server.expectHealthy()
    }

    @Test func aStreamWithoutAShutdownHandlerIsFinishedByTheShutdown() throws {
        let started = TestSignal()
        let closed = TestSignal()
        let server = try TestServer { _, responder in
            let writer = responder.startStreaming()
            writer.onClose = { closed.signal() }
            writer.write("data")
            started.signal()
        }
        let client = try server.connect()
        try client.sendGet("/stream")
        #expect(started.wait())
        let done = TestSignal()
        server.server.shutdown(deadline: .seconds(10)) { done.signal() }
        let response = try client.readResponse()
        #expect(response.text == "data")  // a complete chunked body: the terminator came
        #expect(closed.wait())
        #expect(client.waitForClose())
        client.close()
        #expect(done.wait())
    }

    @Test func headStreamSendsHeadersOnly() throws {
        let server = try TestServer { _, responder in
            let writer = responder.startStreaming()
            writer.write("never sent")
            writer.finish()
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.send("HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try client.readResponse(isHead: true)
        #expect(response.status == 200)
        try client.sendGet("/health")
        #expect(try client.readResponse().text == "ok")
        try server.expectHealthy()
    }

    @Test func http1_0StreamIsDelimitedByClose() throws {
        let server = try TestServer { _, responder in
            let writer = responder.startStreaming()
            writer.write("one ")
            writer.loop.execute {
                writer.write("two")
                writer.finish()
            }
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.send("GET /stream HTTP/1.0\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.header("transfer-encoding") == nil)
        #expect(response.header("connection")?.lowercased() == "close")
        #expect(response.text == "one two")
        try server.expectHealthy()
    }
}

/// `Responder.onAbandon`: a handler still working when its client leaves hears of it.
@Suite(.offPool) struct AbandonTests {
    @Test func aClientThatLeavesBeforeTheAnswerCallsTheAbandonHandler() throws {
        let abandoned = TestSignal()
        let received = TestSignal()
        let server = try TestServer { _, responder in
            responder.onAbandon { abandoned.signal() }
            received.signal()  // and never answer
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/slow")
        #expect(received.wait())
        client.close()
        #expect(abandoned.wait(timeout: .seconds(5)))
        try server.expectHealthy()
    }

    @Test func anAnsweredRequestDropsItsAbandonHandler() throws {
        let calls = TestBox(0)
        let server = try TestServer { _, responder in
            responder.onAbandon { calls.update { $0 += 1 } }
            responder.loop.execute {
                responder.respond(body: "done")
                responder.onAbandon { calls.update { $0 += 1 } }  // too late: dropped
            }
        }
        defer { server.stop() }
        let client = try server.connect()
        try client.sendGet("/quick")
        #expect(try client.readResponse().text == "done")
        client.close()
        // The connection's close is seen by a request that follows on a new connection.
        try server.expectHealthy()
        #expect(calls.value == 0)
    }
}
