/// Where a Redis server is and how to log in to it, read from `redis://[user:password@]host[:port][/db]`, or
/// `rediss://…` for TLS.
///
/// The port defaults to 6379 and the database to 0. The username and password are percent-decoded; a password may
/// also hold `@`, `:` or `/` unencoded (the last `@` ends it). `redis://:secret@host` logs in with a password only
/// (the `default` user). IPv6 hosts go in brackets: `redis://[::1]:6379`. `rediss://` sets ``usesTLS``: the
/// same URL, spoken over TLS (the transport's business, not this value's). Query strings and other schemes are
/// refused with a clear error.
///
/// ``description`` never shows the password.
///
/// **Ownership:** A value.
/// **Thread safety:** Value type; not shared.
public struct RedisURL: Sendable, Equatable, CustomStringConvertible {
    /// The host name or address, without brackets.
    public var host: String
    /// The TCP port.
    public var port: Int
    /// The ACL user, or nil for `default`.
    public var username: String?
    /// The password, or nil for none.
    public var password: String?
    /// The database number.
    public var database: Int
    /// Whether the URL is `rediss://`: the connection is TLS, verified against the URL's host.
    public var usesTLS: Bool

    public static let defaultPort = 6379

    public init(
        host: String,
        port: Int = RedisURL.defaultPort,
        username: String? = nil,
        password: String? = nil,
        database: Int = 0,
        usesTLS: Bool = false
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.usesTLS = usesTLS
    }

    /// Parses a `redis://` or `rediss://` URL.
    ///
    /// - Throws: ``RedisURLError`` naming the part that is wrong.
    public init(parsing text: String) throws(RedisURLError) {
        let bytes = Array(text.utf8)
        guard let schemeEnd = RedisURL.find(Array("://".utf8), in: bytes) else {
            // Only what comes before a ':' or '@', so a password in a mistyped URL stays out of the message.
            let end = bytes.firstIndex { $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "@") } ?? bytes.count
            throw .unsupportedScheme(RESPText.quoted(bytes[..<end]))
        }
        let scheme = String(decoding: bytes[..<schemeEnd], as: UTF8.self).lowercased()
        let usesTLS: Bool
        switch scheme {
        case "redis":
            usesTLS = false
        case "rediss":
            usesTLS = true
        default:
            throw .unsupportedScheme(RESPText.quoted(scheme.utf8))
        }
        var rest = bytes[(schemeEnd &+ 3)...]
        if let mark = rest.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            throw .unexpectedComponent(RESPText.quoted(rest[mark...]))
        }

        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: UInt8(ascii: "@")) {
            let userinfo = rest[rest.startIndex..<at]
            rest = rest[(at &+ 1)...]
            if let colon = userinfo.firstIndex(of: UInt8(ascii: ":")) {
                let user = try RedisURL.percentDecoded(userinfo[userinfo.startIndex..<colon])
                username = user.isEmpty ? nil : user
                password = try RedisURL.percentDecoded(userinfo[(colon &+ 1)...])
            } else {
                guard userinfo.isEmpty else { throw .usernameWithoutPassword }
            }
        }

        var authority = rest
        var path = rest[rest.endIndex...]
        if let slash = rest.firstIndex(of: UInt8(ascii: "/")) {
            authority = rest[rest.startIndex..<slash]
            path = rest[(slash &+ 1)...]
        }

        var host: ArraySlice<UInt8>
        var portText: ArraySlice<UInt8>?
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else {
                throw .invalidHost(RESPText.quoted(authority))
            }
            host = authority[(authority.startIndex &+ 1)..<close]
            let after = authority[(close &+ 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { throw .invalidHost(RESPText.quoted(authority)) }
                portText = after.dropFirst()
            }
            // A zone (RFC 6874) is written `%25` and handed on as `%`, as getaddrinfo takes it.
            var zone: ArraySlice<UInt8> = []
            if let percent = host.firstIndex(of: UInt8(ascii: "%")) {
                guard host[percent...].starts(with: "%25".utf8), host.endIndex &- percent > 3 else {
                    throw .invalidHost(RESPText.quoted(authority))
                }
                zone = host[(percent &+ 3)...]
                host = host[host.startIndex..<percent]
            }
            guard !host.isEmpty, host.allSatisfy(RedisURL.isIPv6Byte), zone.allSatisfy(RedisURL.isHostByte) else {
                throw .invalidHost(RESPText.quoted(authority))
            }
            if !zone.isEmpty {
                host = host + [UInt8(ascii: "%")] + zone
            }
        } else {
            host = authority
            if let colon = authority.firstIndex(of: UInt8(ascii: ":")) {
                host = authority[authority.startIndex..<colon]
                portText = authority[(colon &+ 1)...]
            }
            guard !host.isEmpty else { throw .missingHost }
            guard host.allSatisfy(RedisURL.isHostByte) else { throw .invalidHost(RESPText.quoted(host)) }
        }

        var port = RedisURL.defaultPort
        if let portText {
            guard let value = RESPNumbers.decimal(portText), (1...65_535).contains(value) else {
                throw .invalidPort(RESPText.quoted(portText))
            }
            port = value
        }

        var database = 0
        if !path.isEmpty {
            guard let value = RESPNumbers.decimal(path) else { throw .invalidDatabase(RESPText.quoted(path)) }
            database = value
        }

        self.init(
            host: String(decoding: host, as: UTF8.self),
            port: port,
            username: username,
            password: password,
            database: database,
            usesTLS: usesTLS
        )
    }

    /// The URL with the password replaced by `***`.
    public var description: String {
        var text = usesTLS ? "rediss://" : "redis://"
        if password != nil || username != nil {
            text += RedisURL.percentEncoded(username ?? "")
            text += password == nil ? "" : ":***"
            text += "@"
        }
        if host.contains(":") {
            // Brackets, and the zone's `%` escaped again.
            text += "[" + host.split(separator: "%", maxSplits: 1).joined(separator: "%25") + "]"
        } else {
            text += host
        }
        return text + ":\(port)/\(database)"
    }

    // MARK: - Pieces

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count &- needle.count)
        where haystack[start..<(start &+ needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }

    /// Letters, digits and `-._~`: what a host name may hold (and what a username keeps unescaped).
    private static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Hex digits, `:` and `.` (an embedded IPv4 address).
    private static func isIPv6Byte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: ":"), UInt8(ascii: "."):
            return true
        default:
            return false
        }
    }

    private static func percentDecoded(_ bytes: ArraySlice<UInt8>) throws(RedisURLError) -> String {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "%") else {
                decoded.append(byte)
                index &+= 1
                continue
            }
            guard bytes.endIndex &- index >= 3, let high = hexValue(bytes[index &+ 1]),
                let low = hexValue(bytes[index &+ 2])
            else {
                throw .invalidPercentEncoding
            }
            decoded.append(high &<< 4 | low)
            index &+= 3
        }
        return String(decoding: decoded, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte &- 0x30
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte &- 0x57
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte &- 0x37
        default: return nil
        }
    }

    private static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for byte in text.utf8 {
            if isHostByte(byte) {
                bytes.append(byte)
            } else {
                bytes.append(contentsOf: [UInt8(ascii: "%"), hex[Int(byte &>> 4)], hex[Int(byte & 0x0F)]])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension RESPConnectionStateMachine.Configuration {
    /// A configuration that logs in as `url` says; the other settings as given.
    public init(
        url: RedisURL,
        clientName: String? = nil,
        commandTimeout: Duration? = .seconds(5),
        connectTimeout: Duration = .seconds(5),
        pingInterval: Duration? = .seconds(15),
        maxPendingCommands: Int = 10_000,
        reconnect: RESPReconnectPolicy = RESPReconnectPolicy(),
        parser: RESPParser.Configuration = RESPParser.Configuration(),
        requiresRESP3: Bool = false
    ) {
        self.init(
            username: url.username,
            password: url.password,
            database: url.database,
            clientName: clientName,
            commandTimeout: commandTimeout,
            connectTimeout: connectTimeout,
            pingInterval: pingInterval,
            maxPendingCommands: maxPendingCommands,
            reconnect: reconnect,
            parser: parser,
            requiresRESP3: requiresRESP3
        )
    }
}
