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

extension ASCII {
    private static let lowBits: UInt64 = 0x7F7F_7F7F_7F7F_7F7F

    /// Whether every byte of `buffer` is allowed in a field value (see ``isFieldValueChar(_:)``).
    ///
    /// Tests eight bytes at a time for a byte below 0x20 or equal to 0x7F, and looks at single bytes only in a word
    /// that has one (so a HTAB costs a slow word, nothing more).
    ///
    /// - Complexity: O(n).
    @inline(__always)
    static func allFieldValueChars(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        all(buffer, satisfy: isFieldValueChar) { word in
            let below20 = (word &- ones &* 0x20) & ~word & highBits
            let del = word ^ (ones &* 0x7F)
            return below20 | ((del &- ones) & ~del & highBits)
        }
    }

    /// Whether every byte of `buffer` is allowed in a request-target: visible ASCII (0x21 through 0x7E).
    ///
    /// - Complexity: O(n).
    @inline(__always)
    static func allTargetChars(_ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        all(buffer, satisfy: isTargetChar) { word in
            let below21 = (word &- ones &* 0x21) & ~word & highBits
            let above7E = (((word & lowBits) &+ ones) | word) & highBits
            return below21 | above7E
        }
    }

    /// Whether `buffer` holds exactly the bytes of `literal`.
    @inline(__always)
    static func equals(_ buffer: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard buffer.count == count else { return false }
        let bytes = literal.utf8Start
        var index = 0
        while index < count {
            if buffer[index] != bytes[index] {
                return false
            }
            index &+= 1
        }
        return true
    }

    /// Checks words with `suspect` (nonzero when a word may hold a bad byte) and single bytes with `isValid`.
    @inline(__always)
    private static func all(
        _ buffer: UnsafeBufferPointer<UInt8>,
        satisfy isValid: (UInt8) -> Bool,
        suspect: (UInt64) -> UInt64
    ) -> Bool {
        guard let base = buffer.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        let count = buffer.count
        var index = 0
        while count &- index >= 8 {
            let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            if suspect(word) != 0 {
                for offset in 0..<8 where !isValid(buffer[index &+ offset]) {
                    return false
                }
            }
            index &+= 8
        }
        while index < count {
            if !isValid(buffer[index]) {
                return false
            }
            index &+= 1
        }
        return true
    }
}
