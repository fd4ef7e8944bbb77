import Reactive
import Synchronization

/// The `subject` label of the per-subject channel metrics, bounded: a JWT's `sub` keeps a label of its own for the
/// first ``capacity`` distinct subjects the process sees; every later one is counted under `other`. Requests
/// without a JWT are `anonymous` (never their address: addresses are unbounded) or `static` (a static token), and
/// a JWT without `sub` is `unnamed`. So a series per subject exists for the services and users a deployment has
/// (typically a handful of publishers), and a flood of new subjects adds one series, not one each.
///
/// A subject's text is clipped to ``maxLabelBytes`` (at a character boundary); Prometheus escaping is the
/// exposition's.
///
/// **Thread safety:** every method may be called from any thread; the table is in one ``LockedState``.
final class SubjectLabels: Sendable {
    /// Subjects that get a label of their own.
    let capacity: Int
    /// The longest label value written for a subject.
    static let maxLabelBytes = 64
    /// The label of subjects past ``capacity``.
    static let other = "other"

    private let known = LockedState<Set<String>>([])

    init(capacity: Int = 64) {
        self.capacity = max(0, capacity)
    }

    /// The label value of `identity`.
    func label(for identity: ChannelIdentity) -> String {
        switch identity.credential {
        case .none, .unrecognized: return "anonymous"
        case .staticToken: return "static"
        case .jwt(nil): return "unnamed"
        case .jwt(let subject?):
            let clipped = Self.clip(subject)
            let labelled = known.withLock { known in
                if known.contains(clipped) { return true }
                guard known.count < capacity else { return false }
                known.insert(clipped)
                return true
            }
            return labelled ? clipped : Self.other
        }
    }

    /// `text` cut to ``maxLabelBytes`` bytes of UTF-8, at a character boundary.
    static func clip(_ text: String) -> String {
        guard text.utf8.count > maxLabelBytes else { return text }
        var clipped = ""
        for character in text {
            guard clipped.utf8.count + character.utf8.count <= maxLabelBytes else { break }
            clipped.append(character)
        }
        return clipped
    }
}
