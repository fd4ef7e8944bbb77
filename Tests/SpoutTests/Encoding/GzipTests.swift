import Foundation
import TestSupport
import Testing

@testable import Spout

/// The zlib coder, checked against a decoder that is not ours.
@Suite(.offPool) struct GzipTests {
    /// Inputs around the window sizes the coder picks, repetitive and not.
    static let inputs: [[UInt8]] = {
        var generator = SystemRandomNumberGenerator()
        let random = (0..<70_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let json = Array(
            (#"{"sequence":"fibonacci","start":0,"count":2000,"values":["#
                + (0..<2000).map { "\"\($0 * 7919)\"" }.joined(separator: ",") + "]}").utf8
        )
        return [
            [], [0x41], Array(repeating: 0x20, count: 511), Array(random.prefix(512)), Array(random.prefix(513)),
            Array(json.prefix(1024)), Array(json.prefix(4097)), json, random,
        ]
    }()

    @Test(.enabled(if: Gzip.shared != nil && RealGzipDecoder.isAvailable), arguments: inputs.map { Abbreviated($0) })
    func pythonDecodesWhatWeCodeByteForByte(input argument: Abbreviated<[UInt8]>) throws {
        let input = argument.value
        let gzip = try #require(Gzip.shared)
        let coded = try #require(gzip.compress(input))
        #expect(coded.prefix(3) == [0x1F, 0x8B, 0x08])
        #expect(try RealGzipDecoder.gunzip(coded) == input)
        // Deterministic: the same input codes to the same bytes, which a strong ETag relies on.
        #expect(gzip.compress(input) == coded)
    }

    @Test(.enabled(if: Gzip.shared != nil)) func repetitiveJSONShrinksAndTheCodingNamesTheLibrary() throws {
        let gzip = try #require(Gzip.shared)
        let json = Array(String(repeating: #"{"userId":1,"id":1,"title":"x"},"#, count: 100).utf8)
        let coded = try #require(gzip.compress(json))
        #expect(coded.count * 10 < json.count)
        #expect(gzip.coding.hasPrefix("gzip\(gzip.level)-z1."))
        #expect(EntityTag(opaque: gzip.coding) != nil)
    }

    @Test func aLibraryThatIsNotThereMeansNoCoder() {
        #expect(Gzip(library: "libz-that-does-not-exist.so.1", level: 1) == nil)
        #expect(Gzip(library: "libc.so.6", level: 1) == nil)
    }
}
