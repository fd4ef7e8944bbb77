import EventLoops
import HTTPServer

// Problems: RFC 9457 answers, with this request as their instance.
extension RequestContext {
    /// Answers with an `application/problem+json` body; the instance is this request's path. The request log
    /// records the upstream failure behind it: `cause` when given, else what the problem's members tell.
    func respond(problem: Problem, headers: Headers = [:], cause: UpstreamError? = nil) {
        let problem = instanced(problem)
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: Problem.mediaType)
        if problem.status == 503, let seconds = cause?.retryAfterSeconds {
            // The upstream's own wait: a client retrying sooner would only be answered the same.
            headers.replaceOrAdd(name: "Retry-After", value: String(seconds))
        }
        respond(
            status: Status(code: problem.status),
            headers: headers,
            body: problem.jsonBytes,
            validator: nil,
            upstreamFailure: cause.map(UpstreamFailureSummary.init) ?? UpstreamFailureSummary(problem: problem)
        )
    }

    /// `problem` with this request's path as its instance, unless it names one already.
    func instanced(_ problem: Problem) -> Problem {
        var problem = problem
        if problem.instance == nil { problem.instance = Routes.clip(request.path) }
        return problem
    }
}
