import Reactive
import Synchronization

/// The cap on concurrent subscriptions per subject (`channels.maxSubscriptionsPerSubject`): a JWT's `sub`, the
/// static tokens (together), or the client's address (after `trustedProxies`) when anonymous, keyed as
/// ``PublishRateLimiter/key(_:client:)`` keys publishers.
///
/// A stream (`GET /channels/{name}` or `GET /subscribe`) takes a ``Ticket`` before it starts and gives it back when
/// it ends; past the cap the request is answered `429` instead. Only subjects with a stream open are remembered, so
/// the table is bounded by the open connections.
///
/// **Thread safety:** every method may be called from any thread; the counts are in one ``LockedState``, never held
/// while calling out.
final class SubscriptionQuota: Sendable {
    /// Streams one subject may have open at once.
    let maxPerSubject: Int
    private let counts = LockedState<[String: Int]>([:])

    init(maxPerSubject: Int) {
        self.maxPerSubject = max(1, maxPerSubject)
    }

    /// One open stream's place in its subject's count; given back once, by ``release()`` or when it is dropped.
    ///
    /// **Thread safety:** ``release()`` may be called from any thread, any number of times.
    final class Ticket: Sendable {
        private let quota: SubscriptionQuota
        private let subject: String
        private let released = LockedState(false)

        fileprivate init(quota: SubscriptionQuota, subject: String) {
            self.quota = quota
            self.subject = subject
        }

        /// Gives the place back (the first call only).
        func release() {
            let first = released.withLock { released in
                defer { released = true }
                return !released
            }
            if first { quota.giveBack(subject) }
        }

        deinit {
            release()
        }
    }

    /// A ticket for one more stream of `subject`, or `nil` when it has ``maxPerSubject`` open.
    func take(_ subject: String) -> Ticket? {
        let taken = counts.withLock { counts in
            let open = counts[subject, default: 0]
            guard open < maxPerSubject else { return false }
            counts[subject] = open + 1
            return true
        }
        return taken ? Ticket(quota: self, subject: subject) : nil
    }

    /// Streams `subject` has open.
    func openStreams(of subject: String) -> Int {
        counts.withLock { $0[subject, default: 0] }
    }

    /// Subjects with a stream open.
    var subjects: Int { counts.withLock { $0.count } }

    private func giveBack(_ subject: String) {
        counts.withLock { counts in
            guard let open = counts[subject] else { return }
            counts[subject] = open > 1 ? open - 1 : nil
        }
    }
}
