/// One element of a sequence: its 0-based position and its exact value.
///
/// **Ownership:** a value type; the value's limbs are shared between copies until mutated.
///
/// **Thread safety:** value type; not shared.
public struct Term: Sendable, Equatable, Hashable {
    /// The 0-based position of this element in its sequence (not in the stream: `start` shifts both).
    public let index: Int

    /// The element's value.
    public let value: BigUInt

    /// Creates the element at `index` with the given value.
    public init(index: Int, value: BigUInt) {
        self.index = index
        self.value = value
    }
}
