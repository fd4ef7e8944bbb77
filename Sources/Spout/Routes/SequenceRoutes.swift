import Dispatch
import EventLoops
import Foundation
import HTTPServer
import Reactive
import Sequences
import Synchronization

/// `GET /sequences` and `GET /sequences/{name}`: the sequences as SSE, NDJSON or JSON.
enum SequenceRoutes {
    /// The query parameters `/sequences/{name}` understands.
    static let parameterNames: [String] = ["count", "start", "interval", "format"]

    /// What the sequence routes use.
    ///
    /// **Thread safety:** immutable; the members are thread-safe.
    struct Dependencies: Sendable {
        /// `sequences.*`: the limits of a request.
        let settings: SpoutConfiguration.Sequences
        /// `sse.retryMilliseconds`, for the streams' `retry:` field.
        let retryMilliseconds: Int
        /// Where costly sequence work runs (``SequenceWorker/queue`` unless test hooks watch it).
        let worker: SequenceWorker
        /// The small JSON documents kept for reuse.
        let smallDocuments: SmallDocuments
        /// Under test hooks, makes the probe that watches a stream's producer; nil in production.
        let makeProbe: (@Sendable (SequenceKind) -> SequenceProbe?)?
    }

    /// `GET /sequences`: every sequence with its description and path.
    static let list: Routes.Handler<Dependencies> = { context, sequences in
        do throws(Problem) {
            _ = try QueryParameters(query: context.request, known: [])
        } catch {
            context.respond(problem: error)
            return
        }
        var bytes = Array(#"{"sequences":["#.utf8)
        for (position, kind) in SequenceKind.allCases.enumerated() {
            if position > 0 { bytes.append(UInt8(ascii: ",")) }
            var object = JSONObjectWriter()
            object.add("name", kind.rawValue)
            object.add("description", kind.summary)
            object.add("path", "/sequences/\(kind.rawValue)")
            object.add("maxStart", min(kind.maxStart, sequences.settings.maxStart))
            bytes.append(contentsOf: object.finish())
        }
        bytes.append(contentsOf: Array("],\"formats\":[\"sse\",\"ndjson\",\"json\"]}".utf8))
        context.respond(json: bytes)
    }

    /// `GET /sequences/{name}?count=&start=&interval=&format=`.
    static let stream: Routes.Handler<Dependencies> = { context, sequences in
        do throws(Problem) {
            let plan = try SequencePlan(context: context, sequences)
            switch plan.format {
            case .json:
                let isCostly = plan.isCostly
                if !isCostly, let kept = sequences.smallDocuments.kept(for: plan) {
                    // Kept with its tag: nothing to build for this request.
                    let validator = Validator(tag: kept.tag, cacheControl: Validator.immutable)
                    if context.respondNotModified(validator) { return }
                    context.respond(json: kept.document, validator: validator)
                    return
                }
                // A document of fixed start and count never changes: a client holding it gets 304 before any
                // term is computed.
                let validator = Validator(tag: plan.entityTag, cacheControl: Validator.immutable)
                if context.respondNotModified(validator) { return }
                guard isCostly else {
                    context.respond(
                        json: sequences.smallDocuments.document(for: plan, tag: validator.tag),
                        validator: validator
                    )
                    return
                }
                // Built on a worker; only the answer comes back to the loop.
                let publisher = plan.publisher
                sequences.worker.run(plan.kind, plan.start) {
                    let bytes = jsonDocument(plan, publisher)
                    context.loop.execute { context.respond(json: bytes, validator: validator) }
                }
            case .sse:
                startStream(
                    plan,
                    context,
                    sequences.worker,
                    encoder: SSETermEncoder(retryMilliseconds: plan.retryMilliseconds)
                )
            case .ndjson: startStream(plan, context, sequences.worker, encoder: NDJSONTermEncoder())
            }
        } catch {
            context.respond(problem: error)
        }
    }

    /// The whole bounded sequence in one JSON document, values as decimal strings.
    static func jsonDocument(_ plan: SequencePlan, _ publisher: SequencePublisher) -> [UInt8] {
        // The fields `JSONObjectWriter` would write, straight into the buffer the collector then fills.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64 + min(plan.count ?? 0, 4096) * 8)
        bytes.append(contentsOf: #"{"sequence":"#.utf8)
        JSONText.appendString(plan.kind.rawValue, to: &bytes)
        bytes.append(contentsOf: #","start":"#.utf8)
        JSONText.appendInteger(plan.start, to: &bytes)
        bytes.append(contentsOf: #","count":"#.utf8)
        JSONText.appendInteger(plan.count ?? 0, to: &bytes)
        bytes.append(contentsOf: #","values":"#.utf8)
        let collector = JSONTermCollector(appendingTo: consume bytes)
        // The sequence publishers deliver synchronously within `subscribe` when asked for everything.
        publisher.subscribe(collector)
        var document = collector.finish()
        document.append(UInt8(ascii: "}"))
        return document
    }

    private static func startStream<E: StreamEncoder>(
        _ plan: SequencePlan,
        _ context: RequestContext,
        _ worker: SequenceWorker,
        encoder: E
    ) where E.Element == Term {
        if let remaining = plan.count, remaining == 0, plan.isResume {
            // Resuming past the end of a finite stream: 204 tells EventSource to stop reconnecting.
            context.respond(status: .noContent, body: [])
            return
        }
        guard let writer = context.startEventStream(mediaType: plan.format.mediaType) else { return }
        let publisher = plan.publisher
        guard publisher.startIsCostly else {
            let bridge = DemandBridge<E, Never>(
                writer: writer,
                encoder: encoder,
                heartbeats: context.heartbeats,
                onEnd: { summary in context.streamEnded(summary) }
            )
            subscribe(bridge, to: publisher, plan)
            return
        }
        // Reaching the start takes up to a quarter of a second: a worker does it while the loop serves its
        // other connections. The head and prologue are out already and heartbeats tick meanwhile; a client
        // that leaves ends the bridge, which stops the work at its next chunk.
        let abandoned = SequencePreparation.Flag()
        let bridge = DemandBridge<E, Never>(
            writer: writer,
            encoder: encoder,
            heartbeats: context.heartbeats,
            onEnd: { summary in
                abandoned.set()
                context.streamEnded(summary)
            }
        )
        let loop = context.loop
        worker.run(plan.kind, plan.start) {
            guard let prepared = publisher.reachingStart(isCancelled: { abandoned.isSet }) else { return }
            // Back on the loop before the bridge is touched; a bridge that ended meanwhile cancels it.
            loop.execute { subscribe(bridge, to: prepared, plan) }
        }
    }

    /// Subscribes the bridge, paced when the plan asks for it.
    private static func subscribe<E: StreamEncoder>(
        _ bridge: DemandBridge<E, Never>,
        to publisher: SequencePublisher,
        _ plan: SequencePlan
    ) where E.Element == Term {
        if let paced = plan.paced(publisher) {
            paced.subscribe(bridge)
        } else {
            // The concrete publisher, not an erased one, so its delivery loop is specialised for the bridge.
            publisher.subscribe(bridge)
        }
    }
}

/// Where costly sequence work runs instead of an event loop (reaching a far `start`, and large JSON documents of
/// big numbers): ``SequencePreparation/queue``, or, under test hooks, a wrapper that watches it
/// (``ServiceHooks/sequenceWorker``).
///
/// **Thread safety:** immutable; `run` may be called from any thread.
struct SequenceWorker: Sendable {
    /// Runs the work for a plan of `kind` reaching `start`, on a worker thread.
    let run: @Sendable (_ kind: SequenceKind, _ start: Int, _ work: @escaping @Sendable () -> Void) -> Void

    /// The worker queue itself.
    static let queue = SequenceWorker { _, _, work in SequencePreparation.queue.async(execute: work) }
}

/// Where costly sequence work runs instead of an event loop: reaching a far `start`, and large JSON
/// documents of big numbers.
enum SequencePreparation {
    /// Concurrent, so one slow preparation does not hold up another; Dispatch bounds its threads by the cores.
    static let queue = DispatchQueue(label: "spout.sequences.prepare", qos: .utility, attributes: .concurrent)

    /// Set on the loop when a stream ends, read by the worker preparing it.
    ///
    /// **Thread safety:** an atomic; safe from any thread.
    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)

        var isSet: Bool { value.load(ordering: .relaxed) }

        func set() { value.store(true, ordering: .relaxed) }
    }
}

/// A validated request for one sequence: which, from where, how many, how fast, in which format.
///
/// **Thread safety:** value type; not shared.
struct SequencePlan {
    let kind: SequenceKind
    let format: StreamFormat
    /// The index of the first element to send (after `Last-Event-ID` resumption).
    let start: Int
    /// How many elements to send from `start`; `nil` for an unbounded stream.
    let count: Int?
    /// Milliseconds between elements, if paced.
    let intervalMilliseconds: Int?
    /// Whether `Last-Event-ID` moved the start.
    let isResume: Bool
    let retryMilliseconds: Int
    let probe: SequenceProbe?

    // `borrowing`: an initializer takes its arguments owned, which copied the whole context (a retain, and later
    // a release, per string and array in it) on every request.
    init(context: borrowing RequestContext, _ sequences: borrowing SequenceRoutes.Dependencies) throws(Problem) {
        let settings = sequences.settings
        let name = context.parameters["name"] ?? ""
        guard let kind = SequenceKind(rawValue: name) else {
            let known = SequenceKind.allCases.map(\.rawValue).joined(separator: ", ")
            throw .notFound("unknown sequence \"\(Routes.clip(name))\"; known sequences: \(known)")
        }
        let query = try QueryParameters(query: context.request, known: SequenceRoutes.parameterNames)
        let format = try StreamFormat.negotiate(format: query["format"], accept: context.request.headers["Accept"])
        let maxStart = min(kind.maxStart, settings.maxStart)
        let requestedStart = try query.integer("start", in: 0...maxStart) ?? 0
        let countLimit = format == .json ? settings.maxCount : Int.max
        var count = try query.integer("count", in: 0...countLimit)
        if format == .json && count == nil {
            throw .invalidParameter(
                "count",
                "count is required for JSON (at most \(settings.maxCount)); streams may omit it"
            )
        }
        let interval = try query.integer("interval", in: 1...settings.maxIntervalMilliseconds, unit: "milliseconds")
        if format == .json && interval != nil {
            throw .invalidParameter("interval", "interval paces streams; it does not apply to JSON")
        }

        var start = requestedStart
        var isResume = false
        if format == .sse, let lastEventID = context.request.headers["Last-Event-ID"] {
            let trimmed = lastEventID.trimmingCharacters(in: .whitespaces)
            guard let lastIndex = Int(trimmed), lastIndex >= requestedStart - 1,
                trimmed.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
            else {
                throw .invalidParameter(
                    "Last-Event-ID",
                    "Last-Event-ID must be the index of an event of this stream, got \"\(Routes.clip(lastEventID))\""
                )
            }
            let (next, overflow) = lastIndex.addingReportingOverflow(1)
            start = overflow ? Int.max : next
            isResume = true
            if let total = count {
                let (end, endOverflow) = requestedStart.addingReportingOverflow(total)
                count = endOverflow ? nil : max(0, end - start)
            }
        }
        self.kind = kind
        self.format = format
        self.start = start
        self.count = count
        self.intervalMilliseconds = interval
        self.isResume = isResume
        self.retryMilliseconds = sequences.retryMilliseconds
        self.probe = sequences.makeProbe?(kind)
    }

    /// The strong tag of this plan's JSON document, a pure function of what fixes its bytes: the layout
    /// version (`s1`), the sequence, `start` and `count`. For JSON plans only (`count` is set).
    var entityTag: EntityTag {
        let name = kind.rawValue
        // "s1-", the name, "-", two decimal integers of at most 19 digits each and "-".
        return EntityTag.build(capacity: name.utf8.count + 43) { tag in
            tag.append("s1-" as StaticString)
            tag.append(name)
            tag.append(UInt8(ascii: "-"))
            tag.append(decimal: start)
            tag.append(UInt8(ascii: "-"))
            tag.append(decimal: count ?? 0)
        }
    }

    /// The sequence from `start`, `count` long.
    var publisher: SequencePublisher {
        SequencePublisher(kind: kind, start: start, count: count, probe: probe)
    }

    /// Whether answering takes enough work to do it off the loop: a costly start, or a JSON document of
    /// more than a thousand big numbers (factorials up to 10,000! have 35,660 digits each).
    var isCostly: Bool {
        publisher.startIsCostly || (kind != .naturals && (count ?? 0) > SequencePublisher.costlyStartThreshold)
    }
}

/// The JSON documents of small sequence plans, kept once built: a document is a pure function of the sequence,
/// `start` and `count` (its strong `ETag` says so), and a popular one (`?count=10`) is asked for over and over.
/// Only plans answered on the loop (not costly) are kept, documents of at most ``maxDocumentBytes`` bytes, at most
/// ``capacity`` of them (128: 1 MiB at most). When full, new plans are built each time and not kept (the first
/// ones asked for stay). One per service; a service whose test hooks watch the producers keeps none
/// (``ServiceHooks/smallDocuments``), since a kept document is answered without producing a term.
///
/// **Thread safety:** safe from any thread (a `LockedState`; held for a dictionary lookup, never while building).
final class SmallDocuments: Sendable {
    static let maxDocumentBytes = 8 * 1024
    /// How many documents are kept at most.
    let capacity: Int

    init(capacity: Int = 128) {
        self.capacity = capacity
    }

    private struct Key: Hashable {
        let kind: SequenceKind
        let start: Int
        let count: Int
    }

    /// A document and its `ETag` (``SequencePlan/entityTag``).
    private struct Kept {
        let document: [UInt8]
        let tag: EntityTag
    }

    private let documents = LockedState<[Key: Kept]>([:])

    /// The document of `plan` and its tag, if kept.
    func kept(for plan: SequencePlan) -> (document: [UInt8], tag: EntityTag)? {
        guard let count = plan.count else { return nil }
        let key = Key(kind: plan.kind, start: plan.start, count: count)
        return documents.withLock { $0[key] }.map { ($0.document, $0.tag) }
    }

    /// The document of `plan` (whose ``SequencePlan/entityTag`` is `tag`), kept when it qualifies.
    func document(for plan: SequencePlan, tag: EntityTag) -> [UInt8] {
        guard let count = plan.count else {
            return SequenceRoutes.jsonDocument(plan, plan.publisher)
        }
        let key = Key(kind: plan.kind, start: plan.start, count: count)
        if let kept = documents.withLock({ $0[key] }) { return kept.document }
        let document = SequenceRoutes.jsonDocument(plan, plan.publisher)
        if document.count <= Self.maxDocumentBytes {
            documents.withLock { documents in
                if documents.count < capacity { documents[key] = Kept(document: document, tag: tag) }
            }
        }
        return document
    }
}
