import Foundation
import Testing

@testable import Spout

/// What start-up logs of the configuration (`effectiveValues`, at `debug`) never shows: tokens and Redis passwords.
@Suite struct ConfigSecretsTests {
    @Test func theEffectiveConfigurationHidesTokensAndRedisPasswords() throws {
        let command = try SpoutConfiguration.load(
            arguments: [],
            environment: [
                "SPOUT_CHANNELS_PUBLISH_TOKENS": "pub-secret-1,pub-secret-2",
                "SPOUT_CHANNELS_SUBSCRIBE_TOKENS": "sub-secret",
                "SPOUT_REDIS_URL": "redis://spout:hunter2@redis.internal:6380/3",
            ]
        )
        guard case .run(let configuration) = command else {
            Issue.record("expected a configuration to run, got \(command)")
            return
        }
        #expect(configuration.channels.publishTokens == ["pub-secret-1", "pub-secret-2"])
        #expect(configuration.channels.redisURL == "redis://spout:hunter2@redis.internal:6380/3")
        let values = Dictionary(uniqueKeysWithValues: configuration.effectiveValues.map { ($0.key, $0.value) })
        #expect(values["channels.publishTokens"] == "[2 tokens]")
        #expect(values["channels.subscribeTokens"] == "[1 token]")
        let redis = try #require(values["channels.redisURL"])
        #expect(redis.contains("redis.internal:6380"))
        let everything = configuration.effectiveValues.map(\.value).joined(separator: " ")
        for secret in ["pub-secret-1", "pub-secret-2", "sub-secret", "hunter2"] {
            #expect(!everything.contains(secret), "\(secret) shown")
        }
    }

    @Test(arguments: ["rediss://:hunter2@", "http://redis.internal", "redis://:hunter2@", "nonsense"])
    func aRedisURLThatCannotBeUsedIsRefusedWithoutShowingIt(_ url: String) {
        #expect {
            _ = try SpoutConfiguration.load(arguments: [], environment: ["SPOUT_REDIS_URL": url])
        } throws: { error in
            let text = "\(error)"
            return text.contains("channels.redisURL") && text.contains("redis://") && !text.contains("hunter2")
        }
    }
}
