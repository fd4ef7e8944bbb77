import Foundation
import Reactive

/// One article of a stream and its position in it (from 0), the SSE `id:` that resumes after it.
struct IndexedPost: Sendable, Equatable {
    var index: Int
    var post: Post

    init(index: Int, post: Post) {
        self.index = index
        self.post = post
    }
}

/// The articles of the upstream, one value per article, fetched a page at a time **only as demand
/// requires**: the next page (`GET /posts?_page=n&_limit=size`) is requested when downstream has
/// asked for more articles than the pages so far held, never ahead. A subscriber that asks for 3
/// articles costs one page request; one that cancels cancels the page request in flight.
///
/// The stream finishes after a page shorter than `pageSize` (or an empty one), or after `limit`
/// articles; an upstream failure fails it.
///
///     ArticlePages(client: client, pageSize: 10)
///         .prefix(3)
///         .sink(receiveCompletion: { _ in }, receiveValue: { print($0.index, $0.post.title) })
///     // Prints: 0 …, 1 …, 2 … after one page request
///
/// **Thread safety:** a value; each subscription is safe to request and cancel from any thread.
struct ArticlePages: Publisher, Sendable {
    typealias Output = IndexedPost
    typealias Failure = UpstreamError

    /// Where the pages come from.
    let client: UpstreamClient
    /// Only this user's articles (`?userId=`), or all.
    let userId: Int?
    /// Articles per upstream page (`_limit`), at least 1.
    let pageSize: Int
    /// The position of the first article to send (after a `Last-Event-ID`); earlier ones are skipped.
    let start: Int
    /// The most articles to send, or `nil` for all.
    let limit: Int?
    /// Extra header fields of the page requests (correlation fields; see ``UpstreamClient/get(_:query:headers:)``).
    let headers: [String: String]

    init(
        client: UpstreamClient,
        userId: Int? = nil,
        pageSize: Int,
        start: Int = 0,
        limit: Int? = nil,
        headers: [String: String] = [:]
    ) {
        self.client = client
        self.headers = headers
        self.userId = userId
        self.pageSize = Swift.max(1, pageSize)
        self.start = Swift.max(0, start)
        self.limit = limit.map { Swift.max(0, $0) }
    }

    func receive<S: Subscriber>(subscriber: S) where S.Input == IndexedPost, S.Failure == UpstreamError {
        subscriber.receive(subscription: ArticlePagesSubscription(pages: self, subscriber: subscriber))
    }

    /// Page `number` (from 1) of the upstream's listing.
    func page(_ number: Int) -> AnyPublisher<[Post], UpstreamError> {
        var query: [URLQueryItem] = []
        if let userId { query.append(URLQueryItem(name: "userId", value: String(userId))) }
        query.append(URLQueryItem(name: "_page", value: String(number)))
        query.append(URLQueryItem(name: "_limit", value: String(pageSize)))
        return client.get([Post].self, "/posts", query: query, headers: headers)
    }
}

/// One subscription to ``ArticlePages``: delivers buffered articles as demand allows and starts the
/// next page fetch when demand outruns the buffer.
///
/// Deliveries are serialised by the state machine's draining flag: whoever finds the flag clear (a
/// `request`, or the page fetch that completes) delivers until nothing more can be sent, while
/// calls that arrive meanwhile (re-entrant `request`s included) only update the state. The lock is
/// never held while calling the subscriber or the upstream.
///
/// **Ownership:** retained by its subscriber until completion or cancel, and by the page fetch in flight.
///
/// **Thread safety:** safe to call from any thread.
private final class ArticlePagesSubscription<S: Subscriber>: Subscription, CustomStringConvertible, @unchecked Sendable
where S.Input == IndexedPost, S.Failure == UpstreamError {
    // @unchecked Sendable: `machine` and `subscriber` are guarded by `lock`; `pages` is immutable.
    private let pages: ArticlePages  // Immutable.
    private let lock = Lock()
    private var machine: ArticlePagesStateMachine  // Guarded by lock.
    private var subscriber: S?  // Guarded by lock.

    init(pages: ArticlePages, subscriber: S) {
        self.pages = pages
        self.machine = ArticlePagesStateMachine(pageSize: pages.pageSize, start: pages.start, limit: pages.limit)
        self.subscriber = subscriber
    }

    var description: String { "ArticlePages" }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0 else { return }  // zero demand is a subscriber bug; ignore it rather than trap
        if lock.withLock({ machine.demandRequested(demand) }) { drain() }
    }

    func cancel() {
        let fetch = lock.withLock { () -> (any Cancellable)? in
            subscriber = nil
            return machine.cancelled()
        }
        fetch?.cancel()
    }

    /// Called by the page fetch with the page's articles.
    fileprivate func pageArrived(_ posts: [Post]) {
        if lock.withLock({ machine.pageArrived(posts) }) { drain() }
    }

    /// Called by the page fetch when it failed.
    fileprivate func pageFailed(_ error: UpstreamError) {
        if lock.withLock({ machine.pageFailed(error) }) { drain() }
    }

    /// Runs the machine's actions until it has nothing more to do; only the draining caller gets here.
    private func drain() {
        while true {
            let (action, subscriber) = lock.withLock { () -> (ArticlePagesStateMachine.Action, S?) in
                let action = machine.next()
                let subscriber = self.subscriber
                switch action {
                case .finish, .fail: self.subscriber = nil
                case .idle, .deliver, .fetch: break
                }
                return (action, subscriber)
            }
            switch action {
            case .idle:
                return
            case .deliver(let article):
                guard let subscriber else { continue }
                let more = subscriber.receive(article)
                if more > 0 { lock.withLock { machine.demandAdded(more) } }
            case .fetch(let number):
                let fetch = PageFetch(parent: self)
                guard lock.withLock({ machine.fetchStarted(fetch) }) else { continue }
                pages.page(number).subscribe(fetch)
            case .finish:
                subscriber?.receive(completion: .finished)
            case .fail(let error):
                subscriber?.receive(completion: .failure(error))
            }
        }
    }

    /// The subscriber of one page request; reports to its subscription and can be cancelled before
    /// or after the request started.
    ///
    /// **Thread safety:** safe to call from any thread (its state is behind a mutex).
    final class PageFetch: Subscriber, Cancellable, @unchecked Sendable {
        // @unchecked Sendable: `state` is guarded by `lock`.
        private enum State {
            /// Created; no upstream subscription yet. Next: `.running`, `.done`.
            case waiting(ArticlePagesSubscription)
            /// The request is asked for. Next: `.done`.
            case running(ArticlePagesSubscription, any Subscription)
            /// Reported or cancelled. Final.
            case done
        }

        private let lock = Lock()
        private var state: State  // Guarded by lock.

        init(parent: ArticlePagesSubscription) {
            state = .waiting(parent)
        }

        func receive(subscription: any Subscription) {
            let accepted = lock.withLock { () -> Bool in
                guard case .waiting(let parent) = state else { return false }
                state = .running(parent, subscription)
                return true
            }
            if accepted {
                subscription.request(.max(1))
            } else {
                subscription.cancel()
            }
        }

        func receive(_ input: [Post]) -> Subscribers.Demand {
            takeParent()?.pageArrived(input)
            return .none
        }

        func receive(completion: Subscribers.Completion<UpstreamError>) {
            guard let parent = takeParent() else { return }
            switch completion {
            case .failure(let error): parent.pageFailed(error)
            case .finished:
                let target = UpstreamTarget(url: "/posts", resource: "/posts")
                parent.pageFailed(.badBody(target, reason: "the page request ended without a body"))
            }
        }

        func cancel() {
            let subscription = lock.withLock { () -> (any Subscription)? in
                defer { state = .done }
                if case .running(_, let subscription) = state { return subscription }
                return nil
            }
            subscription?.cancel()
        }

        /// The parent, once: the first report wins, later ones are dropped.
        private func takeParent() -> ArticlePagesSubscription? {
            lock.withLock { () -> ArticlePagesSubscription? in
                defer { state = .done }
                switch state {
                case .waiting(let parent), .running(let parent, _): return parent
                case .done: return nil
                }
            }
        }
    }
}

/// The paging of one ``ArticlePages`` subscription: what is buffered, what is owed, which page is
/// next, and who is delivering.
///
/// **Thread safety:** value type; its subscription keeps it behind a mutex.
struct ArticlePagesStateMachine {
    /// The state of the page requests.
    enum Fetch {
        /// No request in flight; the next page may be fetched.
        case idle
        /// A page request is in flight, with its handle once started (for cancel).
        case running((any Cancellable)?)
        /// The last page was seen: nothing more to fetch.
        case exhausted
    }

    private enum State {
        /// Sending articles and fetching pages. Next: `.finished`.
        case active(Active)
        /// Completed, failed or cancelled; nothing more happens. Final.
        case finished
    }

    private struct Active {
        var buffer: [Post] = []
        /// The next buffered article to send.
        var head = 0
        var demand: Subscribers.Demand = .none
        /// The position of the next article sent.
        var nextIndex: Int
        /// The next page to fetch, from 1.
        var nextPage: Int
        /// Articles to drop from the front of the next page (a resume inside a page).
        var skip: Int
        /// Articles still to send, if limited.
        var remaining: Int?
        var fetch: Fetch = .idle
        /// A failed page request, reported once the buffer is drained.
        var failure: UpstreamError?
        /// Whether a caller is running ``next()`` in a loop; others only update the state.
        var isDraining = false
    }

    /// What the draining caller does next.
    enum Action {
        /// Nothing can happen until more demand or a page arrives; draining stopped.
        case idle
        /// Send this article.
        case deliver(IndexedPost)
        /// Request page `number`, then report it with ``fetchStarted(_:)``.
        case fetch(page: Int)
        /// Send the completion: every article was sent.
        case finish
        /// Send the failure.
        case fail(UpstreamError)
    }

    private let pageSize: Int
    private var state: State

    init(pageSize: Int, start: Int, limit: Int?) {
        self.pageSize = max(1, pageSize)
        let start = max(0, start)
        state = .active(
            Active(nextIndex: start, nextPage: start / self.pageSize + 1, skip: start % self.pageSize, remaining: limit)
        )
    }

    /// Downstream asked for `demand` more. Returns whether the caller must drain.
    mutating func demandRequested(_ demand: Subscribers.Demand) -> Bool {
        modifyActive { active in
            active.demand += demand
        }
    }

    /// The draining caller's subscriber returned `demand` more from `receive(_:)`.
    mutating func demandAdded(_ demand: Subscribers.Demand) {
        guard case .active(var active) = state else { return }
        active.demand += demand
        state = .active(active)
    }

    /// The page in flight arrived. Returns whether the caller must drain.
    mutating func pageArrived(_ posts: [Post]) -> Bool {
        let pageSize = pageSize
        return modifyActive { active in
            guard case .running = active.fetch else { return }
            let kept = active.skip > 0 ? Array(posts.dropFirst(active.skip)) : posts
            active.skip = 0
            if active.head >= active.buffer.count {
                active.buffer = kept
                active.head = 0
            } else {
                active.buffer.append(contentsOf: kept)
            }
            active.fetch = posts.count < pageSize ? .exhausted : .idle
            active.nextPage = active.nextPage < Int.max ? active.nextPage + 1 : active.nextPage
            if active.nextPage == Int.max { active.fetch = .exhausted }
        }
    }

    /// The page in flight failed. Returns whether the caller must drain.
    mutating func pageFailed(_ error: UpstreamError) -> Bool {
        modifyActive { active in
            guard case .running = active.fetch else { return }
            active.fetch = .idle
            active.failure = error
        }
    }

    /// The fetch asked for by `.fetch` was created; false if it must not start (cancelled meanwhile).
    mutating func fetchStarted(_ handle: any Cancellable) -> Bool {
        guard case .active(var active) = state, case .running(nil) = active.fetch else { return false }
        active.fetch = .running(handle)
        state = .active(active)
        return true
    }

    /// The subscriber cancelled. Returns the page request to cancel, if one is in flight.
    mutating func cancelled() -> (any Cancellable)? {
        guard case .active(let active) = state else { return nil }
        state = .finished
        if case .running(let handle) = active.fetch { return handle }
        return nil
    }

    /// The next thing the draining caller does; `.idle` ends its draining.
    mutating func next() -> Action {
        guard case .active(var active) = state else { return .idle }
        defer { if case .active = state { state = .active(active) } }
        if active.remaining == 0 {
            state = .finished
            return .finish
        }
        if active.head < active.buffer.count {
            guard active.demand > 0 else {
                active.isDraining = false
                return .idle
            }
            let article = IndexedPost(index: active.nextIndex, post: active.buffer[active.head])
            active.head += 1
            active.demand -= 1
            active.nextIndex = active.nextIndex < Int.max ? active.nextIndex + 1 : active.nextIndex
            active.remaining = active.remaining.map { $0 - 1 }
            return .deliver(article)
        }
        // The buffer is drained: a failure now, the end, or the next page when demand reaches past it.
        if let failure = active.failure {
            state = .finished
            return .fail(failure)
        }
        switch active.fetch {
        case .exhausted:
            state = .finished
            return .finish
        case .running:
            active.isDraining = false
            return .idle
        case .idle:
            guard active.demand > 0 else {
                active.isDraining = false
                return .idle
            }
            active.fetch = .running(nil)
            return .fetch(page: active.nextPage)
        }
    }

    /// Applies `change` to the active state; returns whether the caller becomes the drainer.
    private mutating func modifyActive(_ change: (inout Active) -> Void) -> Bool {
        guard case .active(var active) = state else { return false }
        change(&active)
        let drains = !active.isDraining
        active.isDraining = true
        state = .active(active)
        return drains
    }
}
