/// A day of the proleptic Gregorian calendar from a count of days since 1970-01-01 (Howard Hinnant's
/// days-to-civil algorithm): what the `Date` header and the request log's timestamps are formatted from, without a
/// formatter on the request path.
///
///     CivilDate(daysSince1970: 19_000)  // 2022-01-08
///
/// **Thread safety:** value type.
public struct CivilDate: Sendable, Equatable {
    public let year: Int64
    /// 1...12.
    public let month: Int
    /// 1...31.
    public let day: Int

    /// The day `days` after (or, negative, before) 1970-01-01. Exact for every `days` within ±25 × 10^15, far
    /// beyond any date a `timeIntervalSince1970` in `Double` seconds can name to the day.
    public init(daysSince1970 days: Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        day = Int(dayOfYear - (153 * monthIndex + 2) / 5 + 1)
        month = Int(monthIndex < 10 ? monthIndex + 3 : monthIndex - 9)
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }
}
