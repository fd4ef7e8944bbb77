import Testing

@testable import HTTPServer

@Suite struct DateCacheTests {
    @Test(arguments: [
        (Int64(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT"),  // RFC 9110's example
        (Int64(0), "Thu, 01 Jan 1970 00:00:00 GMT"),
        (Int64(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT"),
        (Int64(1_704_067_199), "Sun, 31 Dec 2023 23:59:59 GMT"),
        (Int64(4_107_542_400), "Mon, 01 Mar 2100 00:00:00 GMT"),
    ])
    func formatsIMFFixdate(seconds: Int64, expected: String) {
        #expect(DateCache.imfFixdate(seconds) == expected)
    }

    @Test func appendsAHeaderLineAndReformatsOnlyWhenTheSecondChanges() {
        var cache = DateCache()
        var buffer = OutboundBuffer()
        cache.appendLine(to: &buffer, now: 784_111_777)
        cache.appendLine(to: &buffer, now: 784_111_777)
        cache.appendLine(to: &buffer, now: 784_111_778)
        let text = String(decoding: Array(buffer.readableBytes), as: UTF8.self)
        #expect(
            text == "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n" + "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
                + "Date: Sun, 06 Nov 1994 08:49:38 GMT\r\n"
        )
    }
}
