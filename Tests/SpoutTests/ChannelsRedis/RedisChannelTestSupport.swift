import Foundation
import TestSupport
import Testing

@testable import Spout

/// Replicas whose channels live in one Redis, and what the Redis channel tests read from them.

extension SpoutTestServer {
    /// A replica with `channels.redisURL` pointing at `127.0.0.1:redisPort`, plus `channels` members given as JSON
    /// values (set through the configuration file path, as an operator would: `"redisReadiness": "fail"`).
    static func replica(
        redisPort: Int,
        channels extra: [String: Any] = [:],
        _ configure: (inout SpoutConfiguration) -> Void = { _ in }
    ) async throws -> SpoutTestServer {
        var channels: [String: Any] = ["redisURL": "redis://127.0.0.1:\(redisPort)"]
        channels.merge(extra) { $1 }
        let json = try JSONSerialization.data(withJSONObject: ["channels": channels])
        var failure: (any Error)?
        let server = try SpoutTestServer { configuration in
            do {
                try configuration.apply(json: json, source: "test")
            } catch {
                failure = error
            }
            configure(&configuration)
        }
        if let failure {
            await server.stop()
            throw failure
        }
        return server
    }

    /// The samples of `name{…}` whose labels include every one of `labels` (each written `key="value"`).
    func labelledSamples(_ name: String, _ labels: String...) -> [Double] {
        samples(name, labels)
    }

    /// ``labelledSamples(_:_:)`` over a list; none when `/metrics` did not answer.
    private func samples(_ name: String, _ labels: [String]) -> [Double] {
        guard let response = try? get("/metrics"), response.status == 200 else { return [] }
        var values: [Double] = []
        for line in response.text.split(separator: "\n") where line.hasPrefix(name + "{") {
            guard let close = line.lastIndex(of: "}") else { continue }
            let labelText = line[line.index(line.startIndex, offsetBy: name.count + 1)..<close]
            let present = Set(labelText.split(separator: ",").map { String($0) })
            guard labels.allSatisfy({ present.contains($0) }) else { continue }
            if let value = Double(line[line.index(after: close)...].trimmingCharacters(in: .whitespaces)) {
                values.append(value)
            }
        }
        return values
    }

    /// Whether every `spout_redis_up` sample of `role` reads `up` (and there is one).
    func redisIsUp(_ up: Bool, role: String = "publish") -> Bool {
        let samples = labelledSamples("spout_redis_up", #"role="\#(role)""#)
        return !samples.isEmpty && samples.allSatisfy { $0 == (up ? 1 : 0) }
    }

    /// The sum of the samples of `name{…}` with `labels` (-1 when there is none, so a comparison fails).
    func labelledCounter(_ name: String, _ labels: String...) -> Double {
        let values = samples(name, labels)
        return values.isEmpty ? -1 : values.reduce(0, +)
    }
}

extension StreamClient {
    /// Reads until `count` more comment lines (heartbeats) arrived; false if the stream ended first or a read
    /// waited longer than `timeout`. At most 10 000 reads.
    func awaitComments(_ count: Int, timeout: Duration = .seconds(10)) -> Bool {
        let target = comments.count + count
        var reads = 0
        while comments.count < target && !bodyEnded && reads < 10_000 {
            guard (try? pump(timeout: timeout)) == true else { return false }
            reads += 1
        }
        return comments.count >= target
    }

    /// The frames up to and including the one with id `id`, within `timeout` in all (heartbeats do not extend it);
    /// fewer when the stream ends or the time is up first. At most `limit`.
    func frames(through id: String, limit: Int = 10_000, timeout: Duration = .seconds(15)) throws -> [ChannelFrame] {
        let deadline = ContinuousClock.now + TestTiming.scaled(timeout)
        var frames: [ChannelFrame] = []
        while frames.count < limit {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero,
                let event = try nextEvents(1, within: remaining / TestTiming.scale).first
            else { break }
            let frame = ChannelFrame(type: event.type, id: event.lastEventID, data: event.data)
            frames.append(frame)
            if frame.id == id { break }
        }
        return frames
    }
}

/// A channel event id's two parts (`<gen>-<seq>`).
func idParts(_ id: String) -> (gen: String, seq: UInt64)? {
    guard let parsed = ChannelEventID(id) else { return nil }
    return (parsed.epoch, parsed.sequence)
}

/// The `reason` of a `reset` frame's data.
func resetReason(_ frame: ChannelFrame) -> String? {
    guard frame.type == "reset" else { return nil }
    return frame.object?["reason"] as? String
}

/// Checks a `503` publish refusal: problem+json and a `Retry-After` of whole seconds.
func expectUnavailable(_ response: LoopbackClient.Response, _ what: String = "") {
    #expect(response.status == 503, "\(what): \(response)")
    #expect(response.header("Content-Type") == "application/problem+json", "\(what)")
    let retryAfter = response.header("Retry-After").flatMap { Int($0) }
    #expect(retryAfter != nil && retryAfter! >= 1, "Retry-After: \(response.header("Retry-After") ?? "none")")
}

/// How long the tests wait for a replica to notice Redis went away or came back: its reconnects back off with
/// jitter, so this is generous; every wait ends as soon as the state is seen.
let redisStateTimeout: Duration = .seconds(30)
