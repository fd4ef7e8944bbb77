/// ASCII case-insensitive comparison against a lowercase literal.
enum ASCIILower {
    @inline(__always)
    static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let literal = lowercase.utf8Start
        for index in 0..<bytes.count {
            var byte = bytes[index]
            if byte >= 0x41 && byte <= 0x5A { byte |= 0x20 }
            if byte != literal[index] { return false }
        }
        return true
    }
}
