extension ASCII {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// The index of the first `byte` in `buffer` at or after `start`, or nil.
    ///
    /// Reads eight bytes at a time and tests them all at once; the lowest flagged byte of the word is always a true
    /// match because a borrow only propagates upwards from a matching byte.
    ///
    /// - Complexity: O(n) in the bytes searched.
    @inline(__always)
    static func firstIndex(of byte: UInt8, in buffer: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard start >= 0, start < buffer.count, let base = buffer.baseAddress else { return nil }
        let raw = UnsafeRawPointer(base)
        let pattern = UInt64(byte) &* ones
        let count = buffer.count
        var index = start
        while count &- index >= 8 {
            let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)) ^ pattern
            let found = (word &- ones) & ~word & highBits
            if found != 0 {
                return index &+ (found.trailingZeroBitCount &>> 3)
            }
            index &+= 8
        }
        while index < count {
            if buffer[index] == byte {
                return index
            }
            index &+= 1
        }
        return nil
    }
}
