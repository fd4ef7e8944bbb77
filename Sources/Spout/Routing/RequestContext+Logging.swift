import Dispatch
import EventLoops
import HTTPServer

// The request log line and the route's metrics of each response.
extension RequestContext {
    /// Counts the response in the route's metrics and writes its request log line (unless it is the demo
    /// upstream's call to the service itself and `log.selfCalls` is off).
    func record(
        status: Int,
        bytes: Int,
        events: Int? = nil,
        end: StreamEnd? = nil,
        upstreamFailure: UpstreamFailureSummary? = nil
    ) {
        if isSelfCall && !services.logsSelfCalls { return }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds &- startNanoseconds) / 1e9
        routeMetrics.record(status: status, seconds: elapsed)
        guard let sink = services.log else { return }
        var entry = RequestLogEntry(
            time: receivedAt,
            method: request.method.rawValue,
            path: request.path,
            status: status,
            durationSeconds: elapsed,
            bytes: bytes,
            events: events,
            end: end
        )
        entry.query = request.query
        entry.redaction = services.queryRedaction
        entry.route = route
        entry.correlation = correlation
        entry.remoteAddress = request.remoteAddress.isEmpty ? nil : request.remoteAddress
        let proxies = services.proxies
        if !proxies.isEmpty {
            let (client, proxy) = proxies.client(peer: request.remoteAddress, headers: request.headers)
            if let proxy {
                entry.clientAddress = client
                entry.proxy = proxy
            }
        }
        entry.subject = subject
        entry.userAgent = request.headers["User-Agent"]
        entry.upstreamFailure = upstreamFailure
        // A `let` the closure borrows: calling into a captured `var` copied the entry (a retain and a release
        // for each of its strings).
        let line = entry
        sink.write(lineCapacity: 256) { line.appendJSON(to: &$0) }
    }
}
