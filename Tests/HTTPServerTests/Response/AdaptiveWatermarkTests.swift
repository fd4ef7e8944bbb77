import Testing

@testable import HTTPServer

@Suite struct AdaptiveWatermarkTests {
    private static let settings = AdaptiveWatermark.Settings(
        maximumBytes: 256 * 1024,
        minimumBytes: 4096,
        lowBytes: 1024,
        adapts: true
    )

    @Test func settingsAreNormalised() {
        let odd = AdaptiveWatermark.Settings(maximumBytes: 0, minimumBytes: 50, lowBytes: -3, adapts: true)
        #expect(odd.maximumBytes == 1)
        #expect(odd.minimumBytes == 1)
        #expect(odd.lowBytes == 0)
        let inverted = AdaptiveWatermark.Settings(maximumBytes: 1000, minimumBytes: 5000, lowBytes: 10, adapts: true)
        #expect(inverted.minimumBytes == 1000)
    }

    @Test func aStreamStartsSmallWithRoomForOneLaggingBatch() {
        let watermark = AdaptiveWatermark(starting: Self.settings)
        #expect(watermark.highBytes == 4096)
        #expect(watermark.lowBytes == 1024)
        #expect(watermark.reservedBytes == 5120)
        #expect(watermark.keepsStorageTight)
    }

    @Test func aReaderThatKeepsUpDoublesItUpToTheUnprovenCap() {
        var watermark = AdaptiveWatermark(starting: Self.settings)
        var highs: [Int] = []
        for _ in 0..<4 {
            watermark.flushed(readerKeptUp: { true })
            highs.append(watermark.highBytes)
        }
        #expect(highs == [8192, 16384, 16384, 16384])
        #expect(watermark.reservedBytes == 16384 + 4096)
        #expect(watermark.lowBytes == 1024)
    }

    @Test func onlyAProvenReaderGetsFullBatches() {
        var watermark = AdaptiveWatermark(starting: Self.settings)
        watermark.taken(AdaptiveWatermark.provenReaderBytes - 1)
        watermark.flushed(readerKeptUp: { true })
        watermark.flushed(readerKeptUp: { true })
        #expect(watermark.highBytes == 16384)
        watermark.taken(1)
        #expect(!watermark.keepsStorageTight)
        var highs: [Int] = []
        for _ in 0..<6 {
            watermark.flushed(readerKeptUp: { true })
            highs.append(watermark.highBytes)
        }
        #expect(highs == [32768, 65536, 131072, 262144, 262144, 262144])
        #expect(watermark.reservedBytes == 262144 + 65536)
    }

    @Test func aLaggingReaderFallsBackToTheMinimumAtOnce() {
        var watermark = AdaptiveWatermark(starting: Self.settings)
        watermark.taken(AdaptiveWatermark.provenReaderBytes)
        for _ in 0..<5 { watermark.flushed(readerKeptUp: { true }) }
        #expect(watermark.highBytes == 131072)
        watermark.flushed(readerKeptUp: { false })
        #expect(watermark.highBytes == 4096)
        #expect(watermark.reservedBytes == 5120)
        #expect(watermark.lowBytes == 1024)
    }

    @Test func theLowWatermarkIsAtMostHalfTheHighOne() {
        let settings = AdaptiveWatermark.Settings(maximumBytes: 1000, minimumBytes: 600, lowBytes: 900, adapts: true)
        let watermark = AdaptiveWatermark(starting: settings)
        #expect(watermark.highBytes == 600)
        #expect(watermark.lowBytes == 300)
    }

    @Test func withoutAdaptingItIsAlwaysTheMaximumAndAsksNothing() {
        let settings = AdaptiveWatermark.Settings(
            maximumBytes: 64 * 1024,
            minimumBytes: 4096,
            lowBytes: 1024,
            adapts: false
        )
        var watermark = AdaptiveWatermark(starting: settings)
        #expect(watermark.highBytes == 64 * 1024)
        #expect(watermark.reservedBytes == 0)
        watermark.flushed(readerKeptUp: {
            Issue.record("a fixed watermark needs no kernel figures")
            return false
        })
        #expect(watermark.highBytes == 64 * 1024)
        #expect(!watermark.keepsStorageTight)
    }

    @Test func bytesTakenDoNotOverflow() {
        var watermark = AdaptiveWatermark(starting: Self.settings)
        watermark.taken(.max)
        watermark.taken(.max)
        watermark.flushed(readerKeptUp: { true })
        #expect(watermark.highBytes >= Self.settings.minimumBytes)
    }
}
