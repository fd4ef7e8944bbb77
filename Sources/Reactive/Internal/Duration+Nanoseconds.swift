extension Duration {
    /// This duration in whole nanoseconds (truncated toward zero), saturating at `Int.min` / `Int.max`.
    ///
    /// The one conversion of the library; `package`, so that the other modules of the package can use
    /// it instead of their own copies.
    @inlinable
    package var saturatingNanoseconds: Int {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = Int(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, sumOverflow) = scaled.addingReportingOverflow(Int(attoseconds / 1_000_000_000))
        if sumOverflow { return seconds < 0 ? .min : .max }
        return sum
    }
}
