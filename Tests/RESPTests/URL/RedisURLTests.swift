import RESP
import Testing

@Suite struct RedisURLTests {
    @Test(arguments: [
        ("redis://localhost", RedisURL(host: "localhost")),
        ("redis://127.0.0.1:6380", RedisURL(host: "127.0.0.1", port: 6380)),
        ("redis://redis:6379/0", RedisURL(host: "redis")),
        ("redis://redis/3", RedisURL(host: "redis", database: 3)),
        ("redis://redis/", RedisURL(host: "redis")),
        ("REDIS://Redis.Example.com:1", RedisURL(host: "Redis.Example.com", port: 1)),
        ("redis://:secret@host", RedisURL(host: "host", password: "secret")),
        (
            "redis://alice:secret@host:7000/2",
            RedisURL(host: "host", port: 7000, username: "alice", password: "secret", database: 2)
        ),
        ("redis://alice:@host", RedisURL(host: "host", username: "alice", password: "")),
        ("redis://:p%40ss%3Aw%2Frd@host", RedisURL(host: "host", password: "p@ss:w/rd")),
        ("redis://:p@ss:w/rd@host/1", RedisURL(host: "host", password: "p@ss:w/rd", database: 1)),
        ("redis://us%20er:x@host", RedisURL(host: "host", username: "us er", password: "x")),
        ("redis://[::1]", RedisURL(host: "::1")),
        ("redis://[::1]:6390/4", RedisURL(host: "::1", port: 6390, database: 4)),
        ("redis://[fe80::1%25eth0]:1", RedisURL(host: "fe80::1%eth0", port: 1)),
        ("rediss://host:6380", RedisURL(host: "host", port: 6380, usesTLS: true)),
        (
            "REDISS://:secret@redis.example.com/1",
            RedisURL(host: "redis.example.com", password: "secret", database: 1, usesTLS: true)
        ),
        ("rediss://[::1]", RedisURL(host: "::1", usesTLS: true)),
    ])
    func parses(_ text: String, _ expected: RedisURL) throws {
        #expect(try RedisURL(parsing: text) == expected)
    }

    @Test(arguments: [
        ("http://host", RedisURLError.unsupportedScheme("http")),
        ("redisss://host", .unsupportedScheme("redisss")),
        ("rediss://", .missingHost),
        ("rediss://host?ssl_cert_reqs=none", .unexpectedComponent("?ssl_cert_reqs=none")),
        ("unix:///tmp/redis.sock", .unsupportedScheme("unix")),
        ("localhost:6379", .unsupportedScheme("localhost")),
        ("redis:user:secret@host", .unsupportedScheme("redis")),
        ("", .unsupportedScheme("")),
        ("redis://", .missingHost),
        ("redis://:6379", .missingHost),
        ("redis://:pw@/0", .missingHost),
        ("redis://ho st", .invalidHost("ho st")),
        ("redis://[::1", .invalidHost("[::1")),
        ("redis://[::1]x", .invalidHost("[::1]x")),
        ("redis://[zz]", .invalidHost("[zz]")),
        ("redis://[fe80::1%eth0]", .invalidHost("[fe80::1%eth0]")),
        ("redis://[fe80::1%25]", .invalidHost("[fe80::1%25]")),
        ("redis://[fe80::1%25e/0]", .invalidHost("[fe80::1%25e")),
        ("redis://host:", .invalidPort("")),
        ("redis://host:0", .invalidPort("0")),
        ("redis://host:65536", .invalidPort("65536")),
        ("redis://host:-1", .invalidPort("-1")),
        ("redis://host:99999999999999999999999", .invalidPort("99999999999999999999999")),
        ("redis://host/db", .invalidDatabase("db")),
        ("redis://host/-1", .invalidDatabase("-1")),
        ("redis://host/1/2", .invalidDatabase("1/2")),
        ("redis://host/99999999999999999999", .invalidDatabase("99999999999999999999")),
        ("redis://:%zz@host", .invalidPercentEncoding),
        ("redis://:%4@host", .invalidPercentEncoding),
        ("redis://alice@host", .usernameWithoutPassword),
        ("redis://host?db=1", .unexpectedComponent("?db=1")),
        ("redis://host#x", .unexpectedComponent("#x")),
    ])
    func rejects(_ text: String, _ expected: RedisURLError) {
        #expect(throws: expected) { try RedisURL(parsing: text) }
        #expect(expected.description.first?.isLowercase == true)
    }

    @Test func descriptionHidesThePassword() throws {
        #expect(try RedisURL(parsing: "redis://alice:hunter2@host:1/2").description == "redis://alice:***@host:1/2")
        #expect(try RedisURL(parsing: "redis://:hunter2@host").description == "redis://:***@host:6379/0")
        #expect(try RedisURL(parsing: "redis://[::1]").description == "redis://[::1]:6379/0")
        #expect(try RedisURL(parsing: "redis://[fe80::1%25eth0]").description == "redis://[fe80::1%25eth0]:6379/0")
        #expect(RedisURL(host: "h", username: "a b").description == "redis://a%20b@h:6379/0")
        #expect(try RedisURL(parsing: "rediss://:hunter2@h:6380").description == "rediss://:***@h:6380/0")
        #expect(
            try RedisURL(parsing: RedisURL(host: "h", port: 2, database: 3).description)
                == RedisURL(host: "h", port: 2, database: 3)
        )
        #expect(
            try RedisURL(parsing: RedisURL(host: "h", port: 2, database: 3, usesTLS: true).description)
                == RedisURL(host: "h", port: 2, database: 3, usesTLS: true)
        )
    }

    @Test func errorsNeverCarryThePassword() {
        for text in [
            "redis:/:hunter2@host", "redis://:hunter2@ho st", "redis://:hunter2@host:x", "rediss://:hunter2@h:x",
        ] {
            do {
                _ = try RedisURL(parsing: text)
                Issue.record("\(text) parsed")
            } catch {
                #expect(!error.description.contains("hunter2"), "\(error)")
            }
        }
    }

    @Test func aConfigurationTakesTheLoginFromTheURL() throws {
        let url = try RedisURL(parsing: "redis://alice:pw@host/5")
        let configuration = RESPConnectionStateMachine<Int>.Configuration(url: url, clientName: "spout")
        #expect(configuration.username == "alice")
        #expect(configuration.password == "pw")
        #expect(configuration.database == 5)
        #expect(configuration.clientName == "spout")
    }
}
