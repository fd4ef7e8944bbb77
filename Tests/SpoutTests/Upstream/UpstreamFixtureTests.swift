import Foundation
import Reactive
import TestSupport
import Testing

@testable import Spout

/// The scripted upstream itself, seen through the real client: counts, resets and hangs behave as
/// the tests built on it assume.
@Suite(.offPool) struct UpstreamFixtureTests {
    private static func client(_ fixture: UpstreamFixture) -> UpstreamClient {
        var configuration = SpoutConfiguration.Upstream()
        configuration.attemptTimeoutSeconds = 5
        // One attempt and no cache: these tests count what reaches the fixture per call.
        configuration.attempts = 1
        configuration.cacheTTLSeconds = 0
        return UpstreamClient(configuration: configuration, baseURL: fixture.baseURL)
    }

    @Test func countsRequestsPerPathAndAnswersPerAttempt() async throws {
        let fixture = try UpstreamFixture { request in
            request.attempt == 1 ? .status(503) : .json(#"{"userId":1,"id":1,"title":"t","body":"b"}"#)
        }
        defer { fixture.stop() }
        let client = Self.client(fixture)
        let first = await client.get(Post.self, "/posts/1").firstResult()
        #expect(first.failure?.isRetryable == true)
        let second = await client.get(Post.self, "/posts/1").firstResult()
        #expect(try second.get().id == 1)
        #expect(await fixture.waitUntil { $0.requests(to: "/posts/1") == 2 && $0.inFlight == 0 })
    }

    @Test func resetMidBodyIsAFailedRequest() async throws {
        let fixture = try UpstreamFixture { _ in .resetMidBody(partial: #"{"userId":1,"#) }
        defer { fixture.stop() }
        let result = await Self.client(fixture).get(Post.self, "/posts/1").firstResult()
        #expect(result.failure != nil)
        #expect(await fixture.waitUntil { $0.inFlight == 0 && $0.total == 1 })
    }

    @Test func cancellingAHangingRequestEndsItAtTheFixture() async throws {
        let fixture = try UpstreamFixture { _ in .hang }
        defer { fixture.stop() }
        let cancellable = Self.client(fixture).get("/slow").sink(receiveCompletion: { _ in }, receiveValue: { _ in })
        #expect(await fixture.waitUntil { $0.inFlight == 1 })
        cancellable.cancel()
        #expect(await fixture.waitUntil { $0.inFlight == 0 })
    }
}

extension Publisher where Output: Sendable, Failure == UpstreamError {
    /// The first value, or the failure, of this publisher (for tests).
    func firstResult() async -> Result<Output, UpstreamError> {
        let box = TestBox<AnyCancellable?>(nil)
        return await withCheckedContinuation { continuation in
            let once = TestBox(false)
            func finish(_ result: Result<Output, UpstreamError>) {
                if once.update({ done in
                    defer { done = true }; return !done
                }) {
                    continuation.resume(returning: result)
                }
            }
            let cancellable = first().sink(
                receiveCompletion: { completion in
                    if case .failure(let error) = completion { finish(.failure(error)) }
                },
                receiveValue: { finish(.success($0)) }
            )
            box.update { $0 = cancellable }
        }
    }
}
