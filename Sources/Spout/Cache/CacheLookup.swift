import Dispatch
import Reactive

/// What a cache lookup found, as counted in `spout_upstream_cache_total{result}`.
enum CacheLookup: String, Sendable, CaseIterable {
    /// A fresh stored value.
    case hit
    /// Nothing stored and nothing under way: this lookup started an upstream fetch.
    case miss
    /// Nothing stored, but a fetch for the same key was under way: this lookup shares it.
    case coalesced
    /// An expired value, served while a refresh runs (stale-while-revalidate).
    case stale
}
