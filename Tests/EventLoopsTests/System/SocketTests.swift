import Testing

@testable import EventLoops

@Suite struct SocketTests {
    @Test(arguments: ["127.0.0.1", "0.0.0.0", "::", "::1"])
    func listenerOnPortZeroReportsTheBoundPort(host: String) throws {
        let (fd, port) = try Socket.makeListener(host: host, port: 0, backlog: 16)
        defer { Socket.close(fd) }
        #expect(port > 0)
        #expect(try Socket.boundPort(fd) == port)
    }

    @Test func acceptWithNothingPendingWouldBlock() throws {
        let (fd, _) = try Socket.makeListener(host: "127.0.0.1", port: 0, backlog: 16)
        defer { Socket.close(fd) }
        guard case .wouldBlock = try Socket.accept(fd) else {
            Issue.record("expected wouldBlock")
            return
        }
    }

    @Test func bindingABusyPortThrowsAnIOErrorNamingTheCall() throws {
        let (fd, port) = try Socket.makeListener(host: "127.0.0.1", port: 0, backlog: 16)
        defer { Socket.close(fd) }
        #expect(throws: IOError.self) { try Socket.makeListener(host: "127.0.0.1", port: port, backlog: 16) }
        do {
            _ = try Socket.makeListener(host: "127.0.0.1", port: port, backlog: 16)
        } catch {
            #expect(error.call == "bind")
            #expect(error.description.hasPrefix("bind failed: "))
        }
    }

    @Test func badAddressIsAnError() {
        #expect(throws: IOError.self) { try Socket.makeListener(host: "not an address", port: 0, backlog: 1) }
    }

    @Test func syscallWrapperMapsFailures() throws {
        #expect(throws: IOError(errno: 9, call: "read")) {
            _ = try Syscall.run("read") { Socket.setErrno(9) }
        }
        guard case .wouldBlock = try Syscall.run("read", { Socket.setErrno(11) }) else {
            Issue.record("EAGAIN must be wouldBlock")
            return
        }
        var calls = 0
        let result = try Syscall.run("read") {
            calls += 1
            return calls == 1 ? Socket.setErrno(4) : 7  // EINTR once, then success
        }
        guard case .processed(7) = result else {
            Issue.record("EINTR must be retried")
            return
        }
    }

    @Test func openFileLimitIsRaisedToAtLeastTenThousandWhereTheHardLimitAllows() {
        let limit = SystemEnvironment.raiseOpenFileLimit()
        #expect(limit >= 1024)
    }
}
