import Testing

@testable import OpenSSL

/// One binding of `libcrypto.so.3` serves token verification and TLS: ``LibSSL`` takes its libcrypto functions from
/// the ``LibCrypto`` that signatures use, rather than looking them up again.
@Suite struct LibCryptoBindingTests {
    @Test func tlsAndSignaturesShareOneLibcryptoBinding() throws {
        let crypto = try #require(LibCrypto.shared)
        let ssl = try LibSSL.shared.get()
        #expect(ssl.crypto === crypto)
        #expect(try LibCrypto.loaded.get() === crypto)
    }

    @Test func aMissingLibcryptoIsNamedAndMakesNeitherBinding() {
        #expect(throws: TLSError.libraryUnavailable("libdoes-not-exist.so.9 (OpenSSL 3) could not be loaded")) {
            try LibCrypto.load(names: ["libdoes-not-exist.so.9"]).get()
        }
        #expect(throws: TLSError.libraryUnavailable("libdoes-not-exist.so.9 (OpenSSL 3) could not be loaded")) {
            try LibSSL.load(ssl: ["libssl.so.3"], crypto: ["libdoes-not-exist.so.9"]).get()
        }
    }

    @Test func aLibraryWithoutTheFunctionsIsRefusedNamingTheFirstMissing() {
        // libc loads, but has none of libcrypto's functions.
        #expect(throws: TLSError.libraryUnavailable("OpenSSL 3 lacks EVP_get_digestbyname")) {
            try LibCrypto.load(names: ["libc.so.6"]).get()
        }
    }

    @Test func theSharedBindingStillVerifiesAnHMAC() throws {
        // RFC 4231 test case 2: HMAC-SHA256 of "what do ya want for nothing?" under the key "Jefe".
        let crypto = try #require(LibCrypto.shared)
        let mac = try #require(
            crypto.hmac(.sha256, key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        )
        let expected = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        #expect(mac.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() == expected)
    }
}
