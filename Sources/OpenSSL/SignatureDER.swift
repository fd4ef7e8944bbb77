/// The few DER (ITU-T X.690) structures that signature verification hands to OpenSSL, built from raw numbers:
/// a `SubjectPublicKeyInfo` (RFC 5280 §4.1) for `d2i_PUBKEY`, and an `ECDSA-Sig-Value` (RFC 3279 §2.2.3) from the
/// fixed-width `r ‖ s` that JWS uses (RFC 7518 §3.4).
///
/// Only encoding, of values this module chose the shape of: nothing here parses DER.
///
/// **Thread safety:** stateless.
enum SignatureDER {
    /// `rsaEncryption` (1.2.840.113549.1.1.1), as an encoded OID.
    static let rsaEncryption: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]
    /// `id-ecPublicKey` (1.2.840.10045.2.1).
    static let ecPublicKey: [UInt8] = [0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]
    /// `id-Ed25519` (1.3.101.112, RFC 8410).
    static let ed25519: [UInt8] = [0x06, 0x03, 0x2B, 0x65, 0x70]
    /// ASN.1 `NULL`, the parameters of `rsaEncryption`.
    static let null: [UInt8] = [0x05, 0x00]

    /// A tag, its definite length and `content`.
    static func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var result = [tag]
        let count = content.count
        if count < 0x80 {
            result.append(UInt8(count))
        } else {
            var lengthBytes: [UInt8] = []
            var rest = count
            while rest > 0 {
                lengthBytes.insert(UInt8(rest & 0xFF), at: 0)
                rest >>= 8
            }
            result.append(0x80 | UInt8(lengthBytes.count))
            result += lengthBytes
        }
        return result + content
    }

    /// `SEQUENCE { parts… }`.
    static func sequence(_ parts: [UInt8]...) -> [UInt8] {
        element(0x30, parts.flatMap { $0 })
    }

    /// A non-negative `INTEGER` from big-endian `magnitude`: leading zeros dropped, one zero put back when the top
    /// bit is set (DER's minimal two's complement); an empty or all-zero magnitude is `0`.
    static func unsignedInteger(_ magnitude: some Collection<UInt8>) -> [UInt8] {
        var bytes = Array(magnitude.drop { $0 == 0 })
        if bytes.isEmpty || bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return element(0x02, bytes)
    }

    /// `BIT STRING` of whole bytes (no unused bits).
    static func bitString(_ bytes: [UInt8]) -> [UInt8] {
        element(0x03, [0] + bytes)
    }

    /// The `SubjectPublicKeyInfo` of an RSA key: `rsaEncryption`, `NULL`, `RSAPublicKey { n, e }` (RFC 8017 A.1.1).
    static func rsaPublicKey(modulus: [UInt8], exponent: [UInt8]) -> [UInt8] {
        sequence(
            sequence(rsaEncryption, null),
            bitString(sequence(unsignedInteger(modulus), unsignedInteger(exponent)))
        )
    }

    /// The `SubjectPublicKeyInfo` of an EC key on `curve`: the uncompressed point `04 ‖ x ‖ y` (SEC 1 §2.3.3).
    static func ecPublicKey(curve: Curve, x: [UInt8], y: [UInt8]) -> [UInt8] {
        sequence(sequence(ecPublicKey, curve.oid), bitString([0x04] + x + y))
    }

    /// The `SubjectPublicKeyInfo` of an Ed25519 key (RFC 8410 §4): no parameters, the 32 key bytes.
    static func ed25519PublicKey(_ key: [UInt8]) -> [UInt8] {
        sequence(sequence(ed25519), bitString(key))
    }

    /// `ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }` from JWS's `r ‖ s` (each `width` bytes), or `nil`
    /// when `raw` is not `2 × width` bytes long.
    static func ecdsaSignature(raw: [UInt8], width: Int) -> [UInt8]? {
        guard raw.count == 2 * width else { return nil }
        return sequence(unsignedInteger(raw[..<width]), unsignedInteger(raw[width...]))
    }

    /// ``ecdsaSignature(raw:width:)`` written into a stack buffer and handed to `body`, without allocating: the
    /// same bytes. `nil` when `raw` is not `2 × width` bytes long (`width` at most 66, P-521's).
    static func withECDSASignature<R>(
        raw: UnsafeBufferPointer<UInt8>,
        width: Int,
        _ body: (UnsafeBufferPointer<UInt8>) -> R
    ) -> R? {
        guard width > 0, width <= 66, raw.count == 2 * width else { return nil }
        // SEQUENCE header (at most 3 bytes) + two INTEGERs of at most 2 + 1 + 66 bytes.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 144) { buffer -> R in
            // The integers first, after room for the header; then the header right before them.
            var position = 3
            func integer(_ half: Slice<UnsafeBufferPointer<UInt8>>) {
                let magnitude = half.drop { $0 == 0 }
                let pad = magnitude.first.map { $0 & 0x80 != 0 } ?? true  // empty: the INTEGER 0
                buffer[position] = 0x02
                buffer[position + 1] = UInt8(magnitude.count + (pad ? 1 : 0))
                position += 2
                if pad {
                    buffer[position] = 0
                    position += 1
                }
                for byte in magnitude {
                    buffer[position] = byte
                    position += 1
                }
            }
            integer(raw[..<width])
            integer(raw[width...])
            let content = position - 3
            let start: Int
            if content < 0x80 {
                start = 1
                buffer[2] = UInt8(content)
            } else {
                start = 0
                buffer[1] = 0x81
                buffer[2] = UInt8(content)
            }
            buffer[start] = 0x30
            return body(UnsafeBufferPointer(rebasing: buffer[start..<position]))
        }
    }
}

/// The elliptic curves of JWS's ECDSA algorithms (RFC 7518 §3.4) and their JWK names (`crv`, §6.2.1.1).
package enum Curve: String, Sendable, CaseIterable {
    case p256 = "P-256"
    case p384 = "P-384"
    case p521 = "P-521"

    /// Bytes of one coordinate, and of each half of a JWS signature: ⌈bits / 8⌉.
    package var coordinateBytes: Int {
        switch self {
        case .p256: 32
        case .p384: 48
        case .p521: 66
        }
    }

    /// The curve's named-curve OID, encoded (`prime256v1`, `secp384r1`, `secp521r1`).
    var oid: [UInt8] {
        switch self {
        case .p256: [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
        case .p384: [0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x22]
        case .p521: [0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x23]
        }
    }
}
