import Dispatch
import Foundation
import Reactive
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Keeps the keys of `channels.jwt.jwksURL` in the ``TokenVerifier``: fetches the set off the event loops (through
/// an ``UpstreamSession``'s ``CurlDriver`` thread), once at ``start()``, then every `jwksRefreshSeconds`, and when a
/// token names a `kid` no key has (``keyUnknown()``), at most once per `jwksMinRefreshSeconds`. The verifier holds
/// the file's keys (`channels.jwt.jwksFile`) and the URL's together.
///
/// A fetch that fails (unreachable, a status other than 2xx, a body that is no key set) keeps the keys the last
/// good one brought, logs `jwks_fetch_failed` and is counted in `spout_jwks_fetches_total{outcome="failed"}`; it is
/// retried (``retryDelay(afterFailures:)``) with a doubling wait that starts at ``firstRetrySeconds``, is never
/// shorter than `jwksMinRefreshSeconds` (a failing key server is not hammered), and stops after ``maxRetries``
/// failures in a row or when the wait would reach the timer's next refresh. A fetch whose document is the same as
/// the last one's changes nothing (the verified-token cache is kept).
///
/// **Ownership:** one per ``ChannelAccess`` with a URL; ``stop()`` at shutdown ends the timer and the transfer.
///
/// **Thread safety:** every method may be called from any thread; the state is in one ``LockedState``, never held
/// while calling the fetch, the verifier or the log.
final class JWKSRefresher: Sendable {
    /// One fetch: calls its argument once, on any thread, with the document's bytes or why there are none.
    typealias Fetch = @Sendable (@escaping @Sendable (Result<[UInt8], JWKSet.Failure>) -> Void) -> Void
    /// Runs the action once, on any thread, after the seconds given: a retry's wait (a Dispatch timer in the
    /// service, the test's own clock in tests).
    typealias Schedule = @Sendable (Double, @escaping @Sendable () -> Void) -> Void

    /// Failed fetches in a row after which no retry is scheduled (the timer's refresh still comes).
    static let maxRetries = 5
    /// The first retry's wait, in seconds, before ``retryDelay(afterFailures:)`` doubles it.
    static let firstRetrySeconds = 1.0

    /// Why a fetch was started, for the log.
    enum Reason: String, Sendable {
        case start
        case timer
        case unknownKey = "unknown_kid"
        case retry
    }

    private struct State {
        var inFlight = false
        /// When the last refresh asked for by an unknown `kid` started (seconds, ``clock``).
        var lastUnknownKeyRefresh: Double?
        /// The URL's keys, from the last good fetch.
        var urlKeys: [JWKSet.Key] = []
        /// The last good document, to tell an unchanged one.
        var lastDocument: [UInt8]?
        /// Why the last fetch failed, until one succeeds.
        var lastFailure: String?
        /// The refresh timer (a Dispatch source is safe to cancel from any thread; it is only resumed at ``start()``
        /// and cancelled at ``stop()``).
        var timer: UncheckedSendableBox<any DispatchSourceTimer>?
        var stopped = false
        /// Fetches started, whatever the reason.
        var started = 0
        /// Fetches that failed since the last good one.
        var failuresInARow = 0
        /// Whether a retry is waiting to run.
        var retryScheduled = false
    }

    let url: String
    let refreshSeconds: Double
    let minRefreshSeconds: Double
    private let fileKeys: [JWKSet.Key]
    private let verifier: TokenVerifier
    private let fetch: Fetch
    private let clock: @Sendable () -> Double
    private let schedule: Schedule
    private let events: EventLog?
    private let fetchesCounter: CounterFamily?
    private let state = LockedState(State())

    /// - Parameters:
    ///   - fileKeys: The keys of `channels.jwt.jwksFile`, kept beside the URL's.
    ///   - fetch: Gets the document; ``fetch(url:session:)`` in the service, a fake in tests.
    ///   - clock: Seconds, monotonic enough to space refreshes.
    ///   - schedule: Runs a retry after its wait; `DispatchQueue.global().asyncAfter` by default.
    ///   - registry: Where `spout_jwks_fetches_total` is registered; `nil` for none.
    init(
        url: String,
        fileKeys: JWKSet,
        verifier: TokenVerifier,
        refreshSeconds: Double,
        minRefreshSeconds: Double,
        fetch: @escaping Fetch,
        clock: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 },
        schedule: @escaping Schedule = { seconds, action in
            DispatchQueue.global().asyncAfter(
                deadline: .now() + .nanoseconds(UpstreamClient.nanoseconds(seconds)),
                execute: action
            )
        },
        events: EventLog? = nil,
        registry: MetricsRegistry? = nil
    ) {
        self.url = url
        self.fileKeys = fileKeys.keys
        self.verifier = verifier
        self.refreshSeconds = refreshSeconds
        self.minRefreshSeconds = minRefreshSeconds
        self.fetch = fetch
        self.clock = clock
        self.schedule = schedule
        self.events = events
        let counter = registry?.counter(
            "spout_jwks_fetches_total",
            help: "Fetches of channels.jwt.jwksURL, by outcome (ok, unchanged, failed).",
            labels: ["outcome"]
        )
        counter?.preinitialize([["ok"], ["unchanged"], ["failed"]])
        fetchesCounter = counter
    }

    /// Fetches the set now and every ``refreshSeconds`` until ``stop()``.
    func start() {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        let interval = DispatchTimeInterval.nanoseconds(UpstreamClient.nanoseconds(refreshSeconds))
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler { [weak self] in self?.refresh(.timer) }
        let started = state.withLock { state -> Bool in
            guard !state.stopped, state.timer == nil else { return false }
            state.timer = UncheckedSendableBox(timer)
            return true
        }
        guard started else { return }
        timer.resume()
        refresh(.start)
    }

    /// Ends the timer; a fetch in flight changes nothing when it ends.
    func stop() {
        let timer = state.withLock { state -> UncheckedSendableBox<any DispatchSourceTimer>? in
            state.stopped = true
            defer { state.timer = nil }
            return state.timer
        }
        timer?.value.cancel()
    }

    /// A token named a `kid` no key has: refreshes the set, unless one is in flight or the last refresh so asked
    /// for started less than ``minRefreshSeconds`` ago. Returns at once.
    func keyUnknown() {
        let now = clock()
        let due = state.withLock { state -> Bool in
            guard !state.inFlight, !state.stopped else { return false }
            if let last = state.lastUnknownKeyRefresh, now - last < minRefreshSeconds { return false }
            state.lastUnknownKeyRefresh = now
            return true
        }
        if due { refresh(.unknownKey) }
    }

    /// Fetches started so far.
    var fetchesStarted: Int { state.withLock { $0.started } }

    /// Why the last fetch failed, when no fetch has succeeded since.
    var lastFailure: String? { state.withLock { $0.lastFailure } }

    /// Keys the last good fetch held.
    var urlKeyCount: Int { state.withLock { $0.urlKeys.count } }

    /// The wait before retrying after `failures` failed fetches in a row, or `nil` when none is due (past
    /// ``maxRetries``, or the timer's refresh comes first): ``firstRetrySeconds`` doubled per failure after the
    /// first, never less than ``minRefreshSeconds``.
    func retryDelay(afterFailures failures: Int) -> Double? {
        guard failures >= 1, failures <= Self.maxRetries else { return nil }
        let delay = max(minRefreshSeconds, Self.firstRetrySeconds * Double(1 << (failures - 1)))
        return delay < refreshSeconds ? delay : nil
    }

    /// A scheduled retry is due: fetches again, unless a fetch is in flight (its end schedules the next retry if
    /// it fails too) or the refresher stopped.
    private func retryDue() {
        state.withLock { $0.retryScheduled = false }
        refresh(.retry)
    }

    private func refresh(_ reason: Reason) {
        let go = state.withLock { state -> Bool in
            guard !state.inFlight, !state.stopped else { return false }
            state.inFlight = true
            state.started += 1
            return true
        }
        guard go else { return }
        fetch { [self] result in finished(result, reason: reason) }
    }

    private func finished(_ result: Result<[UInt8], JWKSet.Failure>, reason: Reason) {
        let parsed: Result<JWKSet, JWKSet.Failure>
        var document: [UInt8]?
        switch result {
        case .failure(let failure):
            parsed = .failure(failure)
        case .success(let bytes):
            document = bytes
            do {
                parsed = .success(try JWKSet(json: bytes))
            } catch {
                parsed = .failure(JWKSet.Failure(reason: "\(url): \(error.reason)"))
            }
        }
        enum Outcome {
            case replaced([JWKSet.Key])
            case unchanged
            case failed(String, retryIn: Double?)
            case stopped
        }
        let outcome = state.withLock { state -> Outcome in
            state.inFlight = false
            guard !state.stopped else { return .stopped }
            switch parsed {
            case .failure(let failure):
                state.lastFailure = failure.reason
                state.failuresInARow += 1
                guard !state.retryScheduled, let delay = retryDelay(afterFailures: state.failuresInARow) else {
                    return .failed(failure.reason, retryIn: nil)
                }
                state.retryScheduled = true
                return .failed(failure.reason, retryIn: delay)
            case .success(let set):
                state.lastFailure = nil
                state.failuresInARow = 0
                if state.lastDocument == document { return .unchanged }
                state.lastDocument = document
                state.urlKeys = set.keys
                return .replaced(set.keys)
            }
        }
        switch outcome {
        case .stopped:
            return
        case .unchanged:
            fetchesCounter?.increment(["unchanged"])
        case .replaced(let keys):
            verifier.replaceKeys(JWKSet(keys: fileKeys + keys))
            fetchesCounter?.increment(["ok"])
            events?.log(
                .info,
                "jwks_fetched",
                "fetched the JWK Set of channels.jwt.jwksURL",
                ["url": .string(url), "keys": .integer(keys.count), "reason": .string(reason.rawValue)]
            )
        case .failed(let why, let retryIn):
            fetchesCounter?.increment(["failed"])
            var fields: [(String, EventLog.Value)] = [
                ("url", .string(url)), ("error", .string(why)), ("reason", .string(reason.rawValue)),
            ]
            if let retryIn { fields.append(("retry_in_seconds", .number(retryIn))) }
            events?.log(
                .warn,
                "jwks_fetch_failed",
                "could not fetch the JWK Set of channels.jwt.jwksURL; the keys fetched before are kept",
                fields
            )
            if let retryIn { schedule(retryIn) { [weak self] in self?.retryDue() } }
        }
    }

    /// The service's fetch: one `GET url` through `session` (its ``CurlDriver`` thread: nothing blocks the caller),
    /// at most ``JWKSet/maxBytes`` of body, 10 seconds at most, a 2xx status.
    static func fetch(url: URL, session: UpstreamSession) -> Fetch {
        { done in
            let transfer = BodyTransfer(
                url: url,
                headers: ["Accept": "application/jwk-set+json, application/json"],
                timeoutInterval: 10,
                maxBodyBytes: JWKSet.maxBytes,
                session: session
            )
            let slot = FetchSlot()
            let finish: @Sendable (Result<[UInt8], JWKSet.Failure>) -> Void = { result in
                if slot.finish() { done(result) }
            }
            let cancellable = transfer.sink(
                receiveCompletion: { completion in
                    if case .failure(let error) = completion {
                        finish(.failure(JWKSet.Failure(reason: "\(url.absoluteString): \(error)")))
                    } else {
                        finish(.failure(JWKSet.Failure(reason: "\(url.absoluteString): no response")))
                    }
                },
                receiveValue: { data, response in
                    guard (200..<300).contains(response.statusCode) else {
                        finish(.failure(JWKSet.Failure(reason: "\(url.absoluteString): status \(response.statusCode)")))
                        return
                    }
                    finish(.success(Array(data)))
                }
            )
            slot.hold(cancellable)
        }
    }
}

/// One fetch's subscription, held until the fetch ends, and whether it has.
///
/// **Thread safety:** safe from any thread (one ``LockedState``).
private final class FetchSlot: Sendable {
    private let state = LockedState<(held: AnyCancellable?, finished: Bool)>((nil, false))

    /// Marks the fetch finished and lets its subscription go; true the first time only.
    func finish() -> Bool {
        state.withLock { state in
            guard !state.finished else { return false }
            state.finished = true
            state.held = nil
            return true
        }
    }

    /// Keeps `cancellable` until the fetch finishes (not at all if it already has).
    func hold(_ cancellable: AnyCancellable) {
        state.withLock { state in
            if !state.finished { state.held = cancellable }
        }
    }
}
