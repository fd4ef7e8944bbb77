import Foundation
import OpenSSL

/// A JSON Web Key Set (RFC 7517 §5): the keys tokens may be verified with, as read from `channels.jwt.jwksFile` or
/// `channels.jwt.jwksURL`.
///
/// Keys of a kind Spout does not verify with (`kty` unknown, `use` other than `sig`, `key_ops` without `verify`,
/// an unsupported curve) are skipped, as RFC 7517 §5 asks, and counted in ``skipped``; a key Spout reads but
/// OpenSSL refuses is an error, since it is meant for Spout and cannot work.
///
/// **Thread safety:** immutable after `init`; the ``PublicKey``s are safe to use from several threads.
struct JWKSet: Sendable {
    /// One key.
    struct Key: Sendable {
        /// `kid`, if the key has one.
        let keyID: String?
        /// `alg`, when the key is bound to one algorithm (RFC 7517 §4.4).
        let algorithm: String?
        let material: Material
        /// An HMAC secret prepared for verifying (``HMACKey``), made once with the key; `nil` for a public key, or
        /// when libcrypto is not loaded.
        let hmac: HMACKey?

        init(keyID: String?, algorithm: String?, material: Material) {
            self.keyID = keyID
            self.algorithm = algorithm
            self.material = material
            if case .secret(let secret) = material { hmac = HMACKey(secret: secret) } else { hmac = nil }
        }

        /// Whether a token of `algorithm` may be checked with this key: its type fits, and so does its `alg` when it
        /// has one.
        func fits(_ algorithm: JWSAlgorithm) -> Bool {
            let typeFits: Bool
            switch (material, algorithm) {
            case (.secret, .hs256), (.secret, .hs384), (.secret, .hs512): typeFits = true
            case (.publicKey(let key), _):
                switch (key.kind, algorithm) {
                case (.rsa, .rs256), (.rsa, .rs384), (.rsa, .rs512), (.rsa, .ps256), (.rsa, .ps384), (.rsa, .ps512),
                    (.ec, .es256), (.ec, .es384), (.ec, .es512), (.ed25519, .edDSA):
                    typeFits = true
                default: typeFits = false
                }
            default: typeFits = false
            }
            return typeFits && (self.algorithm == nil || self.algorithm == algorithm.rawValue)
        }

        /// The key itself.
        enum Material: Sendable {
            /// `kty: oct`: an HMAC secret.
            case secret([UInt8])
            /// `kty: RSA`, `EC` or `OKP`: a public key.
            case publicKey(PublicKey)
        }

        /// The JWK `kty` of the key.
        var keyType: String {
            switch material {
            case .secret: "oct"
            case .publicKey(let key):
                switch key.kind {
                case .rsa: "RSA"
                case .ec: "EC"
                case .ed25519: "OKP"
                }
            }
        }
    }

    /// Why a set could not be read.
    struct Failure: Error, Equatable, Sendable {
        let reason: String
    }

    let keys: [Key]
    /// Keys skipped as not meant for verifying signatures, or of kinds Spout does not use.
    let skipped: Int

    /// The most keys a set may hold (a set is read whole, and a token without `kid` tries every fitting key).
    static let maxKeys = 256
    /// The largest set document read, in bytes.
    static let maxBytes = 1 << 20

    init(keys: [Key], skipped: Int = 0) {
        self.keys = keys
        self.skipped = skipped
    }

    /// Reads a JWK Set document: `{"keys": [...]}` (a single JWK object is accepted too).
    init(json bytes: [UInt8]) throws(Failure) {
        guard bytes.count <= Self.maxBytes else { throw Failure(reason: "larger than \(Self.maxBytes) bytes") }
        let document: ConfigJSON
        do {
            document = try ConfigJSON.parse(bytes)
        } catch {
            throw Failure(reason: "not JSON: line \(error.line), column \(error.column): \(error.reason)")
        }
        guard case .object(let members) = document else { throw Failure(reason: "not a JSON object") }
        let items: [ConfigJSON]
        if let keys = members.first(where: { $0.name == "keys" })?.value {
            guard case .array(let list) = keys else { throw Failure(reason: "its keys member is not a list") }
            items = list
        } else {
            items = [document]
        }
        guard items.count <= Self.maxKeys else { throw Failure(reason: "more than \(Self.maxKeys) keys") }
        var keys: [Key] = []
        var skipped = 0
        for (position, item) in items.enumerated() {
            guard case .object(let fields) = item else { throw Failure(reason: "key \(position) is not an object") }
            do {
                if let key = try Self.key(fields) { keys.append(key) } else { skipped += 1 }
            } catch {
                throw Failure(reason: "key \(position): \(error.reason)")
            }
        }
        self.init(keys: keys, skipped: skipped)
    }

    /// The key of a JWK's members, `nil` when it is not one for verifying signatures that Spout knows.
    private static func key(_ fields: [(name: String, value: ConfigJSON)]) throws(Failure) -> Key? {
        var strings: [String: String] = [:]
        var keyOperations: [String]?
        for (name, value) in fields {
            switch value {
            case .string(let text): strings[name] = text
            case .array(let items) where name == "key_ops":
                keyOperations = items.compactMap { if case .string(let text) = $0 { text } else { nil } }
            default: continue
            }
        }
        if let use = strings["use"], use != "sig" { return nil }
        if let keyOperations, !keyOperations.contains("verify") { return nil }
        func bytes(_ name: String) throws(Failure) -> [UInt8] {
            guard let text = strings[name] else { throw Failure(reason: "no \(name)") }
            guard let decoded = Base64URL.decode(text.utf8) else { throw Failure(reason: "\(name) is not base64url") }
            return decoded
        }
        let material: Key.Material
        do {
            switch strings["kty"] {
            case "oct":
                let secret = try bytes("k")
                guard !secret.isEmpty else { throw Failure(reason: "an empty HMAC secret") }
                material = .secret(secret)
            case "RSA":
                guard strings["d"] == nil else { throw Failure(reason: "a private RSA key: publish only n and e") }
                material = .publicKey(try PublicKey(rsaModulus: try bytes("n"), exponent: try bytes("e")))
            case "EC":
                guard let curve = strings["crv"].flatMap(Curve.init(rawValue:)) else { return nil }
                guard strings["d"] == nil else { throw Failure(reason: "a private EC key: publish only x and y") }
                material = .publicKey(try PublicKey(curve: curve, x: try bytes("x"), y: try bytes("y")))
            case "OKP":
                guard strings["crv"] == "Ed25519" else { return nil }
                guard strings["d"] == nil else { throw Failure(reason: "a private Ed25519 key: publish only x") }
                material = .publicKey(try PublicKey(ed25519: try bytes("x")))
            default:
                return nil
            }
        } catch let failure as Failure {
            throw failure
        } catch PublicKey.KeyError.cryptoUnavailable {
            throw Failure(reason: "libcrypto.so.3 (OpenSSL 3) could not be loaded, so public keys cannot be used")
        } catch PublicKey.KeyError.invalid(let reason) {
            throw Failure(reason: reason)
        } catch {
            throw Failure(reason: "\(error)")
        }
        return Key(keyID: strings["kid"], algorithm: strings["alg"], material: material)
    }

    /// The keys that may verify a token with `keyID` and `algorithm`: those with its `kid` (every key when the token
    /// names none) whose `kty`, and `alg` when the key has one, fit the algorithm.
    func candidates(keyID: String?, algorithm: JWSAlgorithm) -> [Key] {
        keys.filter { key in (keyID == nil || key.keyID == keyID) && key.fits(algorithm) }
    }

    /// Whether some key has `keyID`.
    func hasKey(_ keyID: String) -> Bool {
        keys.contains { $0.keyID == keyID }
    }
}

extension JWKSet {
    /// The set in the file at `path`, read whole (at most ``maxBytes``).
    static func load(file path: String) -> Result<JWKSet, Failure> {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            return .failure(Failure(reason: "\(path): no such file or not readable"))
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: maxBytes + 1) ?? Data()
        } catch {
            return .failure(Failure(reason: "\(path): \(error.localizedDescription)"))
        }
        do {
            return .success(try JWKSet(json: Array(data)))
        } catch {
            return .failure(Failure(reason: "\(path): \(error.reason)"))
        }
    }
}
