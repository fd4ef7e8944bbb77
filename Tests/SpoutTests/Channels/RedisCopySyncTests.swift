import Testing

@testable import Spout

/// A Redis copy's sync machine on its own (no Redis): reads, held announcements, waiting joins, strangers.
@Suite struct RedisCopySyncTests {
    typealias Machine = RedisCopySync<Int, String>

    private func machine(held: Int = 3, bytes: Int = 100) -> Machine {
        Machine(heldAnnouncementsLimit: held, heldBytesLimit: bytes)
    }

    @Test func aNewCopyReadsEverythingOnceHoldsAnnouncementsMeanwhileThenGoesLive() {
        var sync = machine()
        #expect(sync.needsRead && !sync.isLoaded)
        let step1 = sync.subscribe("first", stranger: false)
        #expect(!step1, "joins wait until it has loaded")
        let read1 = sync.startRead { ("never", 9) }
        #expect(read1 == .read(after: nil), "a new copy reads from the start")
        let read2 = sync.startRead { ("never", 9) }
        #expect(read2 == .none, "one read at a time")
        let step2 = sync.announced(1, bytes: 10)
        #expect(step2 == .none)
        let step3 = sync.announced(2, bytes: 10)
        #expect(step3 == .none)
        let step4 = sync.subscribe("second", stranger: false)
        #expect(!step4)
        let completion = sync.readCompleted()
        #expect(completion.held == [1, 2])
        #expect(completion.joins == ["first", "second"])
        #expect(!completion.readAgain && !completion.joinsWait)
        #expect(sync.phase == .live && sync.isLoaded && sync.waiting.isEmpty && sync.held.isEmpty)
        let step5 = sync.announced(3, bytes: 10)
        #expect(step5 == .apply)
        let step6 = sync.subscribe("third", stranger: false)
        #expect(step6, "a live copy joins at once")
    }

    @Test func aLiveCopyCatchesUpFromItsPositionAndStaysLoaded() {
        var sync = machine()
        _ = sync.startRead { ("", 0) }
        _ = sync.readCompleted()
        let read3 = sync.startRead { ("gen", 41) }
        #expect(read3 == .read(after: 41))
        #expect(sync.phase == .syncing(loaded: true) && sync.isLoaded)
        sync.readContinues()
        let read4 = sync.startRead { ("gen", 80) }
        #expect(read4 == .read(after: 80), "a long history is read on in pieces")
        _ = sync.readCompleted()
        let read5 = sync.startRead { ("", 0) }
        #expect(read5 == .read(after: nil), "no generation yet: from the start")
    }

    @Test func pastTheLimitsAnnouncementsAreDroppedAndReadAgain() {
        var sync = machine(held: 2, bytes: 25)
        _ = sync.startRead { ("", 0) }
        let step7 = sync.announced(1, bytes: 10)
        #expect(step7 == .none)
        let step8 = sync.announced(2, bytes: 20)
        #expect(step8 == .none, "over the bytes")
        let step9 = sync.announced(3, bytes: 10)
        #expect(step9 == .none)
        let step10 = sync.announced(4, bytes: 1)
        #expect(step10 == .none, "over the count")
        #expect(sync.held == [1, 3] && sync.droppedHeld)
        let completion = sync.readCompleted()
        #expect(completion.held == [1, 3])
        #expect(completion.readAgain && !completion.joinsWait)
        #expect(!sync.droppedHeld)
    }

    @Test func aStrangersJoinDuringAReadWaitsForTheNextRead() {
        var sync = machine()
        _ = sync.startRead { ("", 0) }
        let step11 = sync.subscribe("known", stranger: false)
        #expect(!step11)
        let step12 = sync.subscribe("stranger", stranger: true)
        #expect(!step12)
        let first = sync.readCompleted()
        #expect(first.joins.isEmpty && first.joinsWait && first.readAgain)
        #expect(sync.waiting == ["known", "stranger"])
        let read6 = sync.startRead { ("gen", 5) }
        #expect(read6 == .read(after: 5))
        let second = sync.readCompleted()
        #expect(second.joins == ["known", "stranger"] && !second.joinsWait)
        // Live: a stranger still waits (for a read the caller starts), a known id joins.
        let step13 = sync.subscribe("later stranger", stranger: true)
        #expect(!step13)
        #expect(!sync.readAgain, "no read in flight: the caller's read starts after it")
        let step14 = sync.subscribe("known", stranger: false)
        #expect(step14)
    }

    @Test func aFailedReadLetsGoOfWhatWasHeldAndKeepsTheJoinsWaiting() {
        var sync = machine()
        _ = sync.startRead { ("", 0) }
        _ = sync.announced(1, bytes: 10)
        let step15 = sync.subscribe("waiting", stranger: false)
        #expect(!step15)
        sync.readFailed()
        #expect(sync.needsRead && sync.held.isEmpty && sync.heldBytes == 0)
        #expect(sync.waiting == ["waiting"])
        sync.removeWaiting { $0 == "waiting" }
        #expect(sync.waiting.isEmpty)
        let read7 = sync.startRead { ("", 0) }
        #expect(read7 == .read(after: nil))
    }
}
