import EventLoops
import Foundation
import HTTPServer
import Reactive

/// What a subscriber may follow.
///
/// ``mayFollow(_:)`` is the one check of a channel (or a pattern such as `news.*`) against the subscriber's
/// rights, made for every channel and pattern a subscription names and for every channel a pattern picks up
/// later: the request's ``ChannelIdentity`` (static `channels.subscribeTokens`, the same answer for every channel, or
/// a JWT's `spout.subscribe` patterns, from the header, the cookie or `?token=`).
///
/// **Thread safety:** immutable; shared freely.
struct ChannelSubscriberRights: Sendable {
    /// Who the request is, and what its token grants.
    private let identity: ChannelIdentity

    init(identity: ChannelIdentity) {
        self.identity = identity
    }

    /// Nil when the subscriber may follow `channel` (a name, or a pattern `prefix*`); else the problem to
    /// answer (`401`, `403`). A pattern is granted only when one of the token's patterns covers all it can match
    /// (the token's `news.*` or `*` grant `news.*`; its `news.a` does not); a channel a pattern picks up later is
    /// asked again by its name.
    func mayFollow(_ channel: String) -> Problem? {
        identity.mayAccess(channel: channel, for: .subscribe)
            ? nil : identity.refusal(channel: channel, for: .subscribe)
    }
}

/// `GET /subscribe?channel=a&channel=b&channel=news.*`: many channels, and patterns, on one stream
/// (``ChannelMultiSubscription``), resumed as a whole by the cursor each event carries (``ChannelCursor``).
enum ChannelMultiRoutes {
    /// The query parameters `/subscribe` understands; `channel` may repeat.
    static let parameters: [String] = [
        "channel", "lastEventId", "token", "format", "conflate", "client", "presence",
    ]

    /// A subscription's query, checked.
    struct Query: Equatable {
        /// The channels named, in order, each once.
        var channels: [String] = []
        /// The patterns' prefixes (`news.` for `news.*`), in order, each once.
        var prefixes: [String] = []
        /// The other parameters, each given at most once.
        var single: [String: String] = [:]

        /// The channels and patterns as the client wrote them, for the rights check.
        var named: [String] { channels + prefixes.map { $0 + "*" } }
    }

    /// Reads the query: `channel` one or more times (a name, or a pattern: a name's characters then `*`), at
    /// most `maxChannels` of them; each other parameter at most once; nothing else.
    static func parse(_ items: [(name: String, value: String)], maxChannels: Int) throws(Problem) -> Query {
        var query = Query()
        var named = 0
        for (name, value) in items {
            guard parameters.contains(name) else {
                throw .invalidParameter(
                    name,
                    "unknown parameter \"\(Routes.clip(name))\"; known parameters: \(parameters.sorted().joined(separator: ", "))"
                )
            }
            guard name == "channel" else {
                guard query.single[name] == nil else {
                    throw .invalidParameter(name, "\(name) must be given at most once")
                }
                query.single[name] = value
                continue
            }
            named += 1
            guard named <= maxChannels else {
                throw .invalidParameter(
                    "channel",
                    "a subscription names at most \(maxChannels) channels and patterns "
                        + "(channels.maxChannelsPerSubscription); got more"
                )
            }
            if value.utf8.last == UInt8(ascii: "*") {
                let prefix = String(value.dropLast())
                guard isValidPrefix(prefix) else {
                    throw .invalidParameter(
                        "channel",
                        "a pattern is 1–127 characters of A–Z, a–z, 0–9, '.', '_', '~' and '-' followed by '*'; got \""
                            + Routes.clip(value) + "\""
                    )
                }
                if !query.prefixes.contains(prefix) { query.prefixes.append(prefix) }
            } else {
                guard ChannelRoutes.isValidName(value) else {
                    throw .invalidParameter(
                        "channel",
                        "a channel name is 1–128 characters of A–Z, a–z, 0–9, '.', '_', '~' and '-', and not '.' or "
                            + "'..' (or a pattern: such characters then '*'); got \"\(Routes.clip(value))\""
                    )
                }
                if !query.channels.contains(value) { query.channels.append(value) }
            }
        }
        guard named > 0 else {
            throw .invalidParameter(
                "channel",
                "name at least one channel or pattern: /subscribe?channel=a&channel=news.*"
            )
        }
        return query
    }

    /// A pattern's prefix: 1–127 characters a channel name may have.
    static func isValidPrefix(_ prefix: String) -> Bool {
        let count = prefix.utf8.count
        return count >= 1 && count <= 127 && (ChannelRoutes.isValidName(prefix) || prefix == "." || prefix == "..")
    }

    /// Where each channel of a subscription starts, from the client's cursor (if any).
    struct Start {
        /// What the client sent.
        enum Given {
            /// No cursor.
            case none
            /// A cursor that is not one.
            case unreadable
            case cursor(ChannelCursor)
        }
        let given: Given

        /// How channel `name` joins, and the position the client has in it. A channel a pattern picks up after
        /// the subscription began (`later`) starts from its beginning.
        func resume(_ name: String, later: Bool) -> (resume: Channel.Resume, position: ChannelCursor.Position?) {
            if later { return (.fromStart, nil) }
            switch given {
            case .none:
                return (.live, nil)
            case .unreadable:
                return (.unknown, nil)
            case .cursor(let cursor):
                switch cursor.position(of: name) {
                case nil: return (.fromStart, nil)
                case .some(nil): return (.unknown, nil)
                case .some(.some(let position)): return (.after(position.id), position)
                }
            }
        }
    }

    /// `GET /subscribe`.
    static let subscribe: Routes.Handler<ChannelRoutes.Dependencies> = { context, channels in
        // The context a refusal is answered through: identified once the caller is known, so its log line names it.
        var answering = context
        do throws(Problem) {
            let settings = channels.settings
            let query = try parse(context.request.queryItems, maxChannels: settings.maxChannelsPerSubscription)
            let format = try StreamFormat.negotiate(
                format: query.single["format"],
                accept: context.request.headers["Accept"],
                allowed: [.sse, .ndjson]
            )
            let broker = channels.broker
            let identity = try ChannelRoutes.identity(
                context,
                channels,
                for: .subscribe,
                queryToken: query.single["token"]
            )
            let context = context.identified(as: identity)
            answering = context
            let rights = ChannelSubscriberRights(identity: identity)
            for name in query.named {
                if let refusal = rights.mayFollow(name) { throw refusal }
            }
            let ticket = try ChannelRoutes.takeSubscription(context, channels, identity)
            // The header wins, as on /channels/{name}; an empty one is no cursor.
            let text = (context.request.headers["Last-Event-ID"] ?? query.single["lastEventId"])
                .map { $0.trimmingCharacters(in: .whitespaces) }
                .flatMap { $0.isEmpty ? nil : $0 }
            let start = Start(
                given: text.map { text in
                    ChannelCursor(text, maxEntries: settings.maxChannelsPerSubscription).map { .cursor($0) }
                        ?? .unreadable
                } ?? .none
            )
            let multi = ChannelMultiSubscription(
                loop: context.loop,
                maxLegs: settings.maxChannelsPerSubscription,
                mayFollow: { rights.mayFollow($0) == nil }
            )
            let limits = ChannelSubscription.Limits(
                events: settings.subscriberBufferEvents,
                bytes: settings.subscriberBufferBytes,
                overflow: settings.overflow,
                conflate: try ChannelRoutes.flag("conflate", query.single["conflate"])
            )
            let usesSSE = format == .sse
            let loop = context.loop
            let metrics = broker.metrics
            let client = try ChannelRoutes.clientName(query.single["client"])
            let wantsPresence = try ChannelRoutes.flag("presence", query.single["presence"])
            let make = { (channel: Channel) in
                ChannelSubscription(
                    loop: loop,
                    channel: channel,
                    limits: limits,
                    usesSSE: usesSSE,
                    metrics: metrics,
                    client: client,
                    wantsPresence: wantsPresence
                )
            }
            // The channels named: created if need be, as on /channels/{name}.
            for name in query.channels {
                let (resume, position) = start.resume(name, later: false)
                var refusal: ChannelBroker.Refusal?
                multi.addLeg(name, position: position, fromJoin: resume == .live) { _ in
                    switch join(broker.backend, name, resume, make) {
                    case .success(let subscription): return subscription
                    case .failure(let failure):
                        refusal = failure
                        return nil
                    }
                }
                if let refusal {
                    multi.cancel()
                    ticket?.release()
                    ChannelRoutes.respond(refusal, channels.settings, context)
                    return
                }
            }
            if !query.prefixes.isEmpty {
                follow(query.prefixes, backend: broker.backend, multi: multi, start: start, make: make)
            }
            switch format {
            case .ndjson:
                stream(multi, context, format: format, encoder: ChannelMultiNDJSONEncoder(), ticket: ticket)
            default:
                let retry = channels.retryMilliseconds
                let encoder = ChannelMultiSSEEncoder(retryMilliseconds: retry)
                stream(multi, context, format: format, encoder: encoder, ticket: ticket)
            }
        } catch {
            ChannelRoutes.respond(error, answering)
        }
    }

    /// Joins channel `name` (created if need be in process; over Redis, this replica's copy of it, loaded if need
    /// be: the subscription's stream is open meanwhile) with the subscription `make` builds.
    static func join(
        _ backend: ChannelService.Backend,
        _ name: String,
        _ resume: Channel.Resume,
        _ make: (Channel) -> ChannelSubscription
    ) -> Result<ChannelSubscription, ChannelBroker.Refusal> {
        switch backend {
        case .inProcess(let local): local.subscribe(to: name, resume: resume, make: make)
        case .redis(let redis): redis.subscribe(to: name, resume: resume, make: make)
        }
    }

    /// Follows the channels `prefixes` match: those that exist now, and each one created until `multi` ends (in
    /// process, by a publish here; over Redis, by the first publish of its generation on any replica). Never
    /// creates a channel in process. On `multi`'s loop.
    static func follow(
        _ prefixes: [String],
        backend: ChannelService.Backend,
        multi: ChannelMultiSubscription,
        start: Start,
        make: @escaping (Channel) -> ChannelSubscription
    ) {
        let loop = multi.loop
        nonisolated(unsafe) let make = make
        let pick = { (name: String, later: Bool) in
            guard !multi.follows(name), multi.hasRoom, multi.mayFollow(name) else { return }
            let (resume, position) = start.resume(name, later: later)
            multi.addLeg(name, position: position, fromJoin: resume == .live) { _ in
                switch backend {
                case .inProcess(let local):
                    guard let channel = local.existingChannel(named: name) else { return nil }
                    let subscription = make(channel)
                    // A channel retired meanwhile (idle) or full is not followed; the next one created is.
                    return subscription.join(resume: resume, now: ChannelBroker.now) == nil ? subscription : nil
                case .redis(let redis):
                    return try? redis.subscribe(to: name, resume: resume, make: make).get()
                }
            }
        }
        nonisolated(unsafe) let later = pick
        // Watched before the channels that exist are listed, so none created in between is missed (one listed
        // and told of is followed once).
        let watch = ChannelWatch(prefixes: prefixes) { name in
            loop.execute { later(name, true) }
        }
        switch backend {
        case .inProcess(let local):
            local.watch(watch)
            multi.whenEnded { local.unwatch(watch) }
            for name in local.channelNames(matching: watch) { pick(name, false) }
        case .redis(let redis):
            redis.watch(watch)
            multi.whenEnded { redis.unwatch(watch) }
            redis.channelNames(matching: watch, loop: loop) { names in
                for name in names { later(name, false) }
            }
        }
    }

    /// Starts the response and bridges the subscription into it.
    private static func stream<E: StreamEncoder>(
        _ multi: ChannelMultiSubscription,
        _ context: RequestContext,
        format: StreamFormat,
        encoder: E,
        ticket: SubscriptionQuota.Ticket?
    ) where E.Element == ChannelStreamItem {
        guard let bridge = ChannelRoutes.startStream(context, format: format, encoder: encoder, ticket: ticket) else {
            multi.cancel()  // HEAD: the head alone
            return
        }
        multi.start(bridge)
    }
}
