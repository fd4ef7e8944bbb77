import Foundation
import TestSupport
import Testing

/// A gzip decoder that is not ours: Python's `gzip` module (zlib), run as a subprocess. The only honest
/// check of a compressor is a decoder written by someone else. `nil` when `python3` is not installed, and
/// then the tests that need it are skipped (`.enabled(if: RealGzipDecoder.isAvailable)`).
enum RealGzipDecoder {
    static let python: String? = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    static var isAvailable: Bool { python != nil }

    /// The decoded bytes of the gzip member(s) in `bytes`, or `nil` when Python rejects them.
    static func gunzip(_ bytes: [UInt8]) throws -> [UInt8]? {
        let python = try #require(python)
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("spout-gzip-\(UUID().uuidString)")
        try Data(bytes).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let process = try ChildProcess(
            executable: python,
            arguments: [
                "-c",
                "import gzip, sys; sys.stdout.buffer.write(gzip.decompress(open(sys.argv[1], 'rb').read()))",
                input.path,
            ],
            standardOutput: .pipe,
            standardError: .null
        )
        // Read to the end before waiting, so a large output cannot fill the pipe and stall the child.
        let data = try process.readStandardOutput(timeout: .seconds(60))
        return process.wait(timeout: .seconds(10))?.exitStatus == 0 ? data : nil
    }
}
