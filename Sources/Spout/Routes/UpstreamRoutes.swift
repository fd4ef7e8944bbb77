/// The routes on the upstream (``ArticleRoutes``, ``ProfileRoutes``, ``DashboardRoutes``, ``WorkflowRoutes``) and the
/// demo data that stands in for it (``DemoRoutes``): what they share.
enum UpstreamRoutes {
    /// What the upstream routes use.
    ///
    /// **Thread safety:** immutable; the client is thread-safe.
    struct Dependencies: Sendable {
        /// The outbound client.
        let client: UpstreamClient
        /// `upstream.pageSize`: posts per upstream page of `/articles/stream`.
        let pageSize: Int
        /// `sse.retryMilliseconds`, for the streams' `retry:` field.
        let retryMilliseconds: Int
        /// Whether the demo data is served: no upstream is configured (`upstream.baseURL` empty).
        let servesDemo: Bool
    }
}
