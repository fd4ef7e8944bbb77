/// Case-insensitive comparison of ASCII header tokens (`gzip`, `text/event-stream`) as they stand in a
/// request's bytes, without making a `String`: the one copy `AcceptEncoding` and `MediaRange` both parse with.
///
/// **Thread safety:** stateless.
enum ASCIIFolding {
    /// Whether ASCII `bytes`, lower-cased, equal `lowercase` (which is lower case).
    static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let wanted = lowercase.utf8Start
        for index in 0..<bytes.count {
            let byte = bytes[index]
            if (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) != wanted[index] { return false }
        }
        return true
    }
}
