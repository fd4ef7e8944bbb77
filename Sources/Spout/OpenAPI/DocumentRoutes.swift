import HTTPServer

/// `GET /openapi.json` and `GET /problems/{type}`: the service describing itself.
enum DocumentRoutes {
    /// The OpenAPI document may change with a deploy or a configuration change: reuse only after a
    /// revalidation, which its ETag makes a cheap `304`.
    static let documentCacheControl = "no-cache"
    /// A problem page changes only with a release.
    static let pageCacheControl = "max-age=86400"

    /// What `/openapi.json` serves.
    ///
    /// **Thread safety:** immutable.
    struct Dependencies: Sendable {
        /// The document, with this configuration's limits.
        let openAPI: OpenAPIDocument
    }

    /// `GET /openapi.json`: the OpenAPI 3.1 document of this service, as configured.
    static let openAPI: Routes.Handler<Dependencies> = { context, documents in
        do throws(Problem) {
            _ = try QueryParameters(query: context.request, known: [])
            let document = documents.openAPI
            let validator = Validator(tag: document.tag, cacheControl: documentCacheControl)
            if context.respondNotModified(validator) { return }
            context.respond(json: document.bytes, validator: validator)
        } catch {
            context.respond(problem: error)
        }
    }

    /// `GET /problems/{type}`: the HTML page explaining a problem type; `404` for a type Spout does not have.
    static let problemType: Routes.PlainHandler = { context in
        do throws(Problem) {
            _ = try QueryParameters(query: context.request, known: [])
            let slug = context.parameters["type"] ?? ""
            guard let page = ProblemPage.page(slug: slug) else {
                let known = ProblemType.all.map(\.slug).joined(separator: ", ")
                throw .notFound("no problem type \"\(Routes.clip(slug))\"; known types: \(known)")
            }
            let validator = Validator(tag: page.tag, cacheControl: pageCacheControl)
            if context.respondNotModified(validator, contentType: ProblemPage.mediaType) { return }
            context.respond(headers: ["Content-Type": ProblemPage.mediaType], body: page.bytes, validator: validator)
        } catch {
            context.respond(problem: error)
        }
    }
}
