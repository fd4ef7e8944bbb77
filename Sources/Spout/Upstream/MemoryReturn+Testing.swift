import Synchronization

extension MemoryReturn {
    /// How many trims have run, for tests.
    var trimCount: Int { trims.load(ordering: .relaxed) }
}
