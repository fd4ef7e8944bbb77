import EventLoops
import Foundation
import HTTPServer
import Reactive

/// `POST /channels/{name}/events`, `GET /channels/{name}`, `GET /channels/{name}/latest` and `GET /channels`:
/// live publish/subscribe over the in-process ``ChannelBroker``, or over Redis (``RedisChannelBroker``) when
/// `channels.redisURL` is set; the routes answer the same either way.
enum ChannelRoutes {
    /// The query parameters a subscription understands.
    static let subscribeParameters: [String] = ["lastEventId", "token", "format", "conflate", "client", "presence"]

    /// Seconds a client is told to wait when the broker is at a limit.
    static let retryAfterSeconds = "1"

    /// What the channel routes (and `/subscribe`, ``ChannelMultiRoutes``) use.
    ///
    /// **Thread safety:** immutable; the broker is thread-safe.
    struct Dependencies: Sendable {
        /// The broker, access rules and idempotency keys.
        let broker: ChannelService
        /// `channels.*`.
        let settings: SpoutConfiguration.Channels
        /// `sse.retryMilliseconds`, for the streams' `retry:` field.
        let retryMilliseconds: Int
        /// `sse.heartbeatSeconds`: how long a stream whose client went away may keep its place in the subscription
        /// cap (the next keep-alive finds it gone), so the `Retry-After` of the cap's `429`.
        var heartbeatSeconds = 15.0

        /// The `Retry-After` of a refusal by the subscription cap.
        var subscriptionRetryAfter: Int { ChannelRoutes.subscriptionRetryAfter(heartbeatSeconds: heartbeatSeconds) }
    }

    /// The `Retry-After` of a refusal by the subscription cap: `heartbeatSeconds`, whole and at least 1.
    static func subscriptionRetryAfter(heartbeatSeconds: Double) -> Int {
        heartbeatSeconds.isFinite ? max(1, Int(min(heartbeatSeconds, 86_400).rounded(.up))) : 1
    }

    /// `POST /channels/{name}/events`: `{"data": …, "event": …}` or an array of them → `202` with the ids. With an
    /// `Idempotency-Key` (``ChannelIdempotency``), a retry gets the first `202` again and publishes nothing.
    static let publish: Routes.Handler<Dependencies> = { context, channels in
        // The context a refusal is answered through: identified once the caller is known, so its log line names it.
        var answering = context
        do throws(Problem) {
            let name = try channelName(context)
            _ = try QueryParameters(query: context.request, known: [])
            let broker = channels.broker
            let identity = try identity(context, channels, for: .publish)
            let context = context.identified(as: identity)
            answering = context
            try authorize(identity, channel: name, for: .publish)
            let subjectLabel = broker.metrics.subjects.label(for: identity)
            // The RateLimit fields of an allowed publish, sent with its 202.
            var rateFields: [(String, String)] = []
            if let limiter = broker.access.publishLimiter {
                let client = broker.access.proxies.client(
                    peer: context.request.remoteAddress,
                    headers: context.request.headers
                ).client
                switch limiter.decide(
                    PublishRateLimiter.key(identity, client: client),
                    now: Double(ChannelBroker.now) / 1e9
                ) {
                case .allowed(let remaining, let fullIn):
                    rateFields = limiter.headers(remaining: remaining, fullInSeconds: fullIn)
                case .refused(let wait):
                    broker.metrics.publishesRateLimited.increment()
                    context.respond(
                        problem: .rateLimited(
                            "this client may publish \(limiter.burst) at once and \(limiter.perMinute) per minute "
                                + "(channels.publishBurst, channels.publishRatePerMinute); nothing was published, retry "
                                + "in \(wait) s"
                        ),
                        headers: Headers(limiter.headers(retryAfter: wait))
                    )
                    return
                }
            }
            let allowedFields = rateFields
            try requireJSON(context.request.headers["Content-Type"])
            let key = try ChannelIdempotency.key(in: context.request.headers)
            let body = try ChannelPublishBody(
                context.request.body,
                maxDataBytes: channels.settings.maxEventBytes
            )
            // The key's place in this process's table: in flight from here until the answer.
            var slot: ChannelIdempotency.Slot?
            var fingerprint = ""
            if let key {
                let keySlot = ChannelIdempotency.Slot(channel: name, key: key)
                fingerprint = ChannelIdempotency.fingerprint(context.request.body)
                switch broker.idempotency.begin(keySlot, fingerprint: fingerprint, now: ChannelBroker.now) {
                case .proceed:
                    slot = keySlot
                case .repeated(let published):
                    respondPublished(
                        published.ids,
                        on: name,
                        rateFields: allowedFields,
                        subject: subjectLabel,
                        channels,
                        context
                    )
                    return
                case .inFlight:
                    throw .idempotencyKeyInFlight(
                        "a publish with this Idempotency-Key on channel \"\(name)\" is still being answered; "
                            + "nothing was published by this request: wait for that answer, or retry later"
                    )
                case .reused:
                    throw keyReused(name, channels.settings)
                case .full:
                    context.respond(
                        problem: .unavailable(
                            "the service holds its most Idempotency-Keys (channels.idempotencyMaxKeys = "
                                + "\(broker.idempotency.maxKeys)); nothing was published, retry later"
                        ),
                        headers: ["Retry-After": retryAfterSeconds]
                    )
                    return
                }
            }
            switch broker.backend {
            case .redis(let redis):
                // Answered once Redis has stored the events (or could not), on the request's loop. Redis keeps the
                // key (atomically with the events); this process only held it while in flight.
                let idempotency = key.map { RedisChannelStore.Idempotency(key: $0, fingerprint: fingerprint) }
                let slot = slot
                redis.publish(body.publications, on: name, loop: context.loop, idempotency: idempotency) { result in
                    if let slot { broker.idempotency.complete(slot, published: nil, now: ChannelBroker.now) }
                    switch result {
                    case .success(let ids):
                        respondPublished(
                            ids,
                            on: name,
                            rateFields: allowedFields,
                            subject: subjectLabel,
                            channels,
                            context
                        )
                    case .failure(let failure):
                        respond(failure, keyed: key != nil, on: name, channels.settings, context)
                    }
                }
            case .inProcess(let local):
                let result = local.publish(body.publications, on: name)
                if let slot {
                    let published = try? result.get()
                    broker.idempotency.complete(
                        slot,
                        published: published.flatMap { ChannelIdempotency.Published(ids: $0) },
                        now: ChannelBroker.now
                    )
                }
                switch result {
                case .success(let ids):
                    respondPublished(ids, on: name, rateFields: allowedFields, subject: subjectLabel, channels, context)
                case .failure(let refusal): respond(refusal, channels.settings, context)
                }
            }
        } catch {
            respond(error, answering)
        }
    }

    /// `422`: the key was used with another body.
    private static func keyReused(_ name: String, _ settings: SpoutConfiguration.Channels) -> Problem {
        .idempotencyKeyReused(
            "this Idempotency-Key was used on channel \"\(name)\" within the last "
                + "\(windowText(settings.idempotencyWindowSeconds)) for a publish with "
                + "another body; nothing was published: use a new key for a new publish"
        )
    }

    /// `86400 s`, as the window is configured.
    private static func windowText(_ seconds: Double) -> String {
        seconds == seconds.rounded() && seconds < 1e15 ? "\(Int(seconds)) s" : "\(seconds) s"
    }

    /// `GET /channels/{name}`: the channel's events as SSE or NDJSON, resumed after `Last-Event-ID` (or
    /// `?lastEventId=`) from the history.
    static let subscribe: Routes.Handler<Dependencies> = { context, channels in
        // The context a refusal is answered through: identified once the caller is known, so its log line names it.
        var answering = context
        do throws(Problem) {
            let name = try channelName(context)
            let query = try QueryParameters(query: context.request, known: subscribeParameters)
            let format = try StreamFormat.negotiate(
                format: query["format"],
                accept: context.request.headers["Accept"],
                allowed: [.sse, .ndjson]
            )
            let broker = channels.broker
            let identity = try identity(context, channels, for: .subscribe, queryToken: query["token"])
            let context = context.identified(as: identity)
            answering = context
            try authorize(identity, channel: name, for: .subscribe)
            let ticket = try takeSubscription(context, channels, identity)
            // The header wins: EventSource sends it when it reconnects, while its URL still carries the query
            // parameter of the first connection.
            // An empty one (after trimming) is no resume point at all.
            let lastEventID = (context.request.headers["Last-Event-ID"] ?? query["lastEventId"])
                .map { $0.trimmingCharacters(in: .whitespaces) }
                .flatMap { $0.isEmpty ? nil : $0 }
            let resume = lastEventID.map(Channel.Resume.after) ?? .live
            let settings = channels.settings
            let limits = ChannelSubscription.Limits(
                events: settings.subscriberBufferEvents,
                bytes: settings.subscriberBufferBytes,
                overflow: settings.overflow,
                conflate: try flag("conflate", query["conflate"])
            )
            let client = try clientName(query["client"])
            let wantsPresence = try flag("presence", query["presence"])
            let make = { (channel: Channel) in
                ChannelSubscription(
                    loop: context.loop,
                    channel: channel,
                    limits: limits,
                    usesSSE: format == .sse,
                    metrics: broker.metrics,
                    client: client,
                    wantsPresence: wantsPresence
                )
            }
            let joined =
                switch broker.backend {
                case .redis(let redis): redis.subscribe(to: name, resume: resume, make: make)
                case .inProcess(let local): local.subscribe(to: name, resume: resume, make: make)
                }
            switch joined {
            case .failure(let refusal):
                ticket?.release()
                respond(refusal, channels.settings, context)
            case .success(let subscription):
                switch format {
                case .ndjson:
                    stream(subscription, context, format: format, encoder: ChannelNDJSONEncoder(), ticket: ticket)
                default:
                    let retry = channels.retryMilliseconds
                    let encoder = ChannelSSEEncoder(retryMilliseconds: retry)
                    stream(subscription, context, format: format, encoder: encoder, ticket: ticket)
                }
            }
        } catch {
            respond(error, answering)
        }
    }

    /// `GET /channels/{name}/latest`: the newest event as JSON, `404` when there is none.
    static let latest: Routes.Handler<Dependencies> = { context, channels in
        // The context a refusal is answered through: identified once the caller is known, so its log line names it.
        var answering = context
        do throws(Problem) {
            let name = try channelName(context)
            let query = try QueryParameters(query: context.request, known: ["token"])
            let broker = channels.broker
            let identity = try identity(context, channels, for: .subscribe, queryToken: query["token"])
            let context = context.identified(as: identity)
            answering = context
            try authorize(identity, channel: name, for: .subscribe)
            let none = Problem.notFound("channel \"\(name)\" has no event")
            switch broker.backend {
            case .redis(let redis):
                redis.latest(of: name, loop: context.loop) { result in
                    switch result {
                    case .success(let event?): context.respond(json: event.jsonObject)
                    case .success(nil): respond(none, context)
                    case .failure(let failure): respond(failure, channels.settings, context)
                    }
                }
            case .inProcess(let local):
                guard let event = local.existingChannel(named: name)?.latest.value else { throw none }
                context.respond(json: event.jsonObject)
            }
        } catch {
            respond(error, answering)
        }
    }

    /// `GET /channels`: every channel with its subscribers, last id and history, for operators (the same rule
    /// as publishing: a publish token, or loopback when none is configured).
    static let list: Routes.Handler<Dependencies> = { context, channels in
        do throws(Problem) {
            _ = try QueryParameters(query: context.request, known: [])
            let broker = channels.broker
            let identity = try identity(context, channels, for: .publish)
            guard identity.mayAccessEveryChannel(for: .publish) else {
                switch identity.publish {
                case .denied(let problem): throw problem
                default:
                    throw .channelNotGranted("listing channels needs the right to publish to every channel (\"*\")")
                }
            }
            switch broker.backend {
            case .redis(let redis):
                redis.summaries(loop: context.loop) { result in
                    switch result {
                    case .success(let summaries): respondList(summaries, context)
                    case .failure(let failure): respond(failure, channels.settings, context)
                    }
                }
            case .inProcess(let local):
                respondList(local.summaries(), context)
            }
        } catch {
            respond(error, context)
        }
    }

    /// `{"channels":[{"name","subscribers","lastId","historyEvents","historyBytes"}, …]}`.
    private static func respondList(_ summaries: [Channel.Summary], _ context: RequestContext) {
        var bytes = Array(#"{"channels":["#.utf8)
        for (position, summary) in summaries.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            var object = JSONObjectWriter()
            object.add("name", summary.name)
            object.add("subscribers", summary.subscribers)
            if let lastID = summary.lastID { object.add("lastId", lastID) } else { object.addNull("lastId") }
            object.add("historyEvents", summary.historyEvents)
            object.add("historyBytes", summary.historyBytes)
            bytes.append(contentsOf: object.finish())
        }
        bytes.append(contentsOf: Array("]}".utf8))
        context.respond(json: bytes)
    }

    /// `202 {"channel": name, "ids": [...]}`.
    /// `rateFields`: the `RateLimit` / `RateLimit-Policy` fields of a publish its quota allowed (none without one);
    /// `subject`: the publisher's label in `spout_channel_subject_publishes_total`.
    private static func respondPublished(
        _ ids: [String],
        on name: String,
        rateFields: [(String, String)] = [],
        subject: String,
        _ channels: Dependencies,
        _ context: RequestContext
    ) {
        channels.broker.metrics.subjectPublishes.increment([subject])
        var object = JSONObjectWriter()
        object.add("channel", name)
        object.addRaw("ids", json: JSONText.stringArray(ids))
        if rateFields.isEmpty {
            context.respond(status: .accepted, json: object.finish())
        } else {
            var headers = Headers(rateFields)
            headers.add(name: "Content-Type", value: "application/json")
            context.respond(status: .accepted, headers: headers, body: object.finish())
        }
    }

    /// What the Redis broker could not do: its store is at `maxChannels`; Redis certainly did not store or read
    /// anything (`503` `unavailable` + `Retry-After`); Redis took a publish but did not confirm it (`503`
    /// `outcome-unknown` + `Retry-After`: it may have been stored); the key was used with another body (`422`).
    private static func respond(
        _ failure: RedisChannelBroker.PublishFailure,
        keyed: Bool = false,
        on name: String = "",
        _ settings: SpoutConfiguration.Channels,
        _ context: RequestContext
    ) {
        switch failure {
        case .tooManyChannels:
            respond(ChannelBroker.Refusal.tooManyChannels, settings, context)
        case .unavailable(let reason):
            context.respond(
                problem: .unavailable(
                    "the channels' Redis is unavailable (\(reason)); nothing was stored, retry later"
                ),
                headers: ["Retry-After": retryAfterSeconds]
            )
        case .outcomeUnknown(let reason):
            let retry =
                keyed
                ? "retry with the same Idempotency-Key, which publishes them at most once"
                : "a retry may publish them twice (send an Idempotency-Key to retry safely)"
            context.respond(
                problem: .outcomeUnknown(
                    "the channels' Redis took the publish but did not confirm it (\(reason)); the events may or may "
                        + "not have been stored and delivered: \(retry)"
                ),
                headers: ["Retry-After": retryAfterSeconds]
            )
        case .keyReused:
            respond(keyReused(name, settings), context)
        }
    }

    /// `GET /channels/{name}/presence`: `{"channel":…,"count":n,"clients":[…],"partial":false}`, who is subscribed
    /// (over Redis: to every live replica), the named ones (`?client=`) by name; `partial` true when Redis could not
    /// be read and the answer is this replica's view (``RedisChannelBroker/presence(of:loop:completion:)``).
    static let presence: Routes.Handler<Dependencies> = { context, channels in
        // The context a refusal is answered through: identified once the caller is known, so its log line names it.
        var answering = context
        do throws(Problem) {
            let name = try channelName(context)
            let query = try QueryParameters(query: context.request, known: ["token"])
            let broker = channels.broker
            let identity = try identity(context, channels, for: .subscribe, queryToken: query["token"])
            let context = context.identified(as: identity)
            answering = context
            try authorize(identity, channel: name, for: .subscribe)
            switch broker.backend {
            case .inProcess(let local):
                let (count, clients) = local.existingChannel(named: name)?.presence ?? (0, [])
                respondPresence(name, ChannelPresenceView(count: count, clients: clients, partial: false), context)
            case .redis(let redis):
                redis.presence(of: name, loop: context.loop) { view in respondPresence(name, view, context) }
            }
        } catch {
            respond(error, answering)
        }
    }

    /// The presence route's answer.
    private static func respondPresence(_ name: String, _ view: ChannelPresenceView, _ context: RequestContext) {
        var object = JSONObjectWriter()
        object.add("channel", name)
        object.add("count", view.count)
        object.addRaw("clients", json: JSONText.stringArray(view.clients))
        object.add("partial", view.partial)
        context.respond(json: object.finish())
    }

    // MARK: Helpers

    /// The longest `client` name.
    static let maxClientBytes = 64

    /// A subscriber's `client` name: 1–64 characters of `A–Z a–z 0–9 . _ ~ - @`; absent: anonymous.
    static func clientName(_ value: String?) throws(Problem) -> String? {
        guard let value else { return nil }
        let bytes = value.utf8
        let valid =
            !bytes.isEmpty && bytes.count <= maxClientBytes
            && bytes.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
                    UInt8(ascii: "-"), UInt8(ascii: "@"):
                    true
                default: false
                }
            }
        guard valid else {
            throw .invalidParameter(
                "client",
                "a client name is 1–\(maxClientBytes) characters of A–Z, a–z, 0–9, '.', '_', '~', '-' and '@'; got \""
                    + Routes.clip(value) + "\""
            )
        }
        return value
    }

    /// A boolean query parameter: `true` or `false` (absent: false); anything else is a `400`.
    static func flag(_ name: String, _ value: String?) throws(Problem) -> Bool {
        switch value {
        case nil, "false": return false
        case "true": return true
        case let other?:
            throw .invalidParameter(name, "\(name) must be true or false, got \"\(Routes.clip(other))\"")
        }
    }

    /// The `{name}` segment, checked: 1–128 characters of `[A-Za-z0-9._~-]`, not `.` or `..` (dot segments, which
    /// clients and proxies resolve away: `/channels/..` is `/` to them).
    static func channelName(_ context: RequestContext) throws(Problem) -> String {
        let name = context.parameters["name"] ?? ""
        guard isValidName(name) else {
            throw .invalidParameter(
                "name",
                "a channel name is 1–128 characters of A–Z, a–z, 0–9, '.', '_', '~' and '-', and not '.' or '..'; "
                    + "got \"\(Routes.clip(name))\""
            )
        }
        return name
    }

    static func isValidName(_ name: String) -> Bool {
        let bytes = name.utf8
        return !bytes.isEmpty && bytes.count <= 128 && name != "." && name != ".."
            && bytes.allSatisfy(ChannelPattern.isNameByte)
    }

    /// `application/json` (parameters such as `charset=utf-8` allowed), else `415`.
    static func requireJSON(_ contentType: String?) throws(Problem) {
        guard let contentType else {
            throw .unsupportedMediaType("the body needs Content-Type: application/json; none was given")
        }
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first ?? ""
        guard mediaType.trimmingCharacters(in: .whitespaces).lowercased() == "application/json" else {
            throw .unsupportedMediaType(
                "the body must be application/json, got \"\(Routes.clip(contentType))\""
            )
        }
    }

    /// The request's identity (``ChannelAccess/identify(authorization:cookieToken:queryToken:remoteAddress:now:)``):
    /// its `Authorization` header, and for a subscription the `channels.jwt.cookieName` cookie and `queryToken`;
    /// throws the `401` of a token that is not valid.
    static func identity(
        _ context: RequestContext,
        _ channels: Dependencies,
        for operation: ChannelOperation,
        queryToken: String? = nil
    ) throws(Problem) -> ChannelIdentity {
        let access = channels.broker.access
        let cookieToken =
            operation == .subscribe
            ? access.cookieName.flatMap { RequestCookies.value(named: $0, in: context.request.headers) } : nil
        return try access.identify(
            authorization: try authorization(context),
            cookieToken: cookieToken,
            queryToken: operation == .subscribe ? queryToken : nil,
            remoteAddress: access.proxies.client(peer: context.request.remoteAddress, headers: context.request.headers)
                .client
        ).get()
    }

    /// A place among the open streams of the request's client (``SubscriptionQuota``, keyed as publish quotas are),
    /// counted in `spout_channel_subject_subscriptions_total`; `nil` without `channels.maxSubscriptionsPerSubject`.
    /// Throws the `429` when the client has its most streams open.
    static func takeSubscription(
        _ context: RequestContext,
        _ channels: Dependencies,
        _ identity: ChannelIdentity
    ) throws(Problem) -> SubscriptionQuota.Ticket? {
        let broker = channels.broker
        var ticket: SubscriptionQuota.Ticket?
        if let quota = broker.access.subscriptionQuota {
            let client = broker.access.proxies.client(
                peer: context.request.remoteAddress,
                headers: context.request.headers
            ).client
            ticket = quota.take(PublishRateLimiter.key(identity, client: client))
            guard ticket != nil else {
                broker.metrics.subscriptionsRefused.increment()
                throw .tooManySubscriptions(
                    "this client already has \(quota.maxPerSubject) subscription streams open (channels."
                        + "maxSubscriptionsPerSubject); no stream was opened: close one, or follow several channels on "
                        + "one stream with GET /subscribe",
                    retryAfter: channels.subscriptionRetryAfter
                )
            }
        }
        broker.metrics.subjectSubscriptions.increment([broker.metrics.subjects.label(for: identity)])
        return ticket
    }

    /// Throws the refusal (`401`/`403`) of `operation` on `channel` to `identity`, if it is refused. The routes
    /// identify their context before this check, so a refused request's log line names its subject too.
    static func authorize(_ identity: ChannelIdentity, channel: String, for operation: ChannelOperation) throws(Problem)
    {
        guard identity.mayAccess(channel: channel, for: operation) else {
            throw identity.refusal(channel: channel, for: operation)
        }
    }

    /// The one `Authorization` header, if any; `400` when it is repeated (taking the first let a valid token carry
    /// an invalid one through).
    static func authorization(_ context: RequestContext) throws(Problem) -> String? {
        try Routes.singleHeader("Authorization", in: context.request.headers)
    }

    /// Answers `problem`; a `401` carries the `WWW-Authenticate` challenge, a problem with a `retryAfter` member
    /// (the subscription cap's `429`) the same as `Retry-After`.
    static func respond(_ problem: Problem, _ context: RequestContext) {
        var headers: Headers = problem.status == 401 ? ["WWW-Authenticate": #"Bearer realm="spout""#] : [:]
        if case .integer(let seconds)? = problem.extensions.first(where: { $0.name == "retryAfter" })?.value {
            headers.replaceOrAdd(name: "Retry-After", value: String(seconds))
        }
        context.respond(problem: problem, headers: headers)
    }

    static func respond(
        _ refusal: ChannelBroker.Refusal,
        _ settings: SpoutConfiguration.Channels,
        _ context: RequestContext
    ) {
        let detail =
            switch refusal {
            case .tooManyChannels:
                "the service has its most channels (channels.maxChannels = "
                    + "\(settings.maxChannels)); idle ones are dropped, retry later"
            case .tooManySubscribers:
                "the channel has its most subscribers (channels.maxSubscribersPerChannel = "
                    + "\(settings.maxSubscribersPerChannel)); retry later"
            }
        context.respond(problem: .unavailable(detail), headers: ["Retry-After": retryAfterSeconds])
    }

    /// Starts the response and bridges the subscription into it.
    private static func stream<E: StreamEncoder>(
        _ subscription: ChannelSubscription,
        _ context: RequestContext,
        format: StreamFormat,
        encoder: E,
        ticket: SubscriptionQuota.Ticket?
    ) where E.Element == ChannelEvent {
        guard let bridge = startStream(context, format: format, encoder: encoder, ticket: ticket) else {
            subscription.cancel()  // HEAD: the head alone
            return
        }
        subscription.start(bridge)
    }

    /// Starts a channel stream's response (one channel's or many's) and returns the bridge that writes `encoder`'s
    /// frames into it at the reader's pace; nil for `HEAD`, whose head alone is sent. `ticket`, the stream's place
    /// in its subject's quota, is given back when the stream ends.
    static func startStream<E: StreamEncoder>(
        _ context: RequestContext,
        format: StreamFormat,
        encoder: E,
        ticket: SubscriptionQuota.Ticket?
    ) -> DemandBridge<E, ChannelStreamEnd>? {
        guard let writer = context.startEventStream(mediaType: format.mediaType) else {
            ticket?.release()
            return nil
        }
        return DemandBridge<E, ChannelStreamEnd>(
            writer: writer,
            encoder: encoder,
            heartbeats: context.heartbeats,
            failureProblem: { _ in .unavailable("the subscriber fell behind") },
            failureEnd: { end in
                switch end {
                case .overflow: .overflow
                }
            },
            onEnd: { summary in
                ticket?.release()
                context.streamEnded(summary)
            }
        )
    }
}
