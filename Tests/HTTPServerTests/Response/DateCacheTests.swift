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

    /// The calendar the `Date` header and the request log share, against Python's `datetime.date` for the same
    /// day counts: the epoch, the day before, a leap day, the last day of year 9999, and year 0's 1 March.
    @Test(arguments: [
        (Int64(0), CivilDate.Fields(1970, 1, 1)), (-1, .init(1969, 12, 31)), (19_000, .init(2022, 1, 8)),
        (11_016, .init(2000, 2, 29)), (2_932_896, .init(9999, 12, 31)), (-719_468, .init(0, 3, 1)),
    ])
    func civilDatesFromDayCounts(days: Int64, expected: CivilDate.Fields) {
        let date = CivilDate(daysSince1970: days)
        #expect(CivilDate.Fields(date.year, date.month, date.day) == expected)
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

extension CivilDate {
    /// A year, month and day to compare with.
    struct Fields: Equatable, Sendable, CustomStringConvertible {
        let year: Int64
        let month: Int
        let day: Int

        init(_ year: Int64, _ month: Int, _ day: Int) {
            self.year = year
            self.month = month
            self.day = day
        }

        var description: String { "\(year)-\(month)-\(day)" }
    }
}
