extension BigUInt {
    /// Limbs 1 and up, least significant first; empty for values below 10^18. Allocates: for tests, which check
    /// where a carry lands.
    var high: [UInt64] {
        switch storage {
        case .small: []
        case .large(let limbs): Array(limbs.dropFirst())
        }
    }
}
