import Glibc

/// `gzip` (RFC 1952) through the system zlib, loaded at run time with `dlopen("libz.so.1")`.
///
/// Debian's `zlib1g` is `Priority: required`, so `libz.so.1` is on every Debian system and in every image
/// built from one; `swift build` needs neither it nor its headers. When it cannot be loaded (or its
/// `z_stream` is not the LP64 layout this file writes), ``shared`` is `nil` and Spout sends bodies without a
/// coding. Output is deterministic for a given zlib version and input, which the strong `ETag` of a
/// compressed body relies on: ``coding`` (`gzip-z1.2.13`) names the version inside the tag.
///
/// **Ownership:** one process-wide instance; the library handle is never closed.
///
/// **Thread safety:** safe to call from any thread: each call owns its own `z_stream`.
final class Gzip: Sendable {
    private typealias DeflateInit2 =
        @convention(c) (
            UnsafeMutableRawPointer?, Int32, Int32, Int32, Int32, Int32, UnsafePointer<CChar>?, Int32
        ) -> Int32
    private typealias Deflate = @convention(c) (UnsafeMutableRawPointer?, Int32) -> Int32
    private typealias DeflateEnd = @convention(c) (UnsafeMutableRawPointer?) -> Int32
    private typealias DeflateBound = @convention(c) (UnsafeMutableRawPointer?, UInt) -> UInt
    private typealias ZlibVersion = @convention(c) () -> UnsafePointer<CChar>?

    private let deflateInit2: DeflateInit2
    private let deflate: Deflate
    private let deflateEnd: DeflateEnd
    private let deflateBound: DeflateBound
    /// The version string zlib reports, passed back to `deflateInit2_` as its ABI check. Immutable.
    private let version: [CChar]
    /// The compression level, 1 (fastest) … 9 (smallest).
    let level: Int32
    /// The name of this coder's output in entity tags: `gzip`, the level and the zlib version.
    let coding: String

    /// The zlib coder, or `nil` when `libz.so.1` is missing or unusable. Level 1, as nginx uses by default:
    /// on JSON it codes about twice as fast as level 6 for a body about 5% larger.
    static let shared: Gzip? = Gzip(library: "libz.so.1", level: 1)

    /// Loads `library` and checks that it is a zlib whose stream this file can drive.
    init?(library: String, level: Int32) {
        // The z_stream offsets below are those of LP64 Linux, 112 bytes.
        guard MemoryLayout<Int>.size == 8, let handle = dlopen(library, RTLD_NOW | RTLD_LOCAL) else { return nil }
        func symbol<F>(_ name: String, as type: F.Type) -> F? {
            dlsym(handle, name).map { unsafeBitCast($0, to: type) }
        }
        guard let deflateInit2 = symbol("deflateInit2_", as: DeflateInit2.self),
            let deflate = symbol("deflate", as: Deflate.self),
            let deflateEnd = symbol("deflateEnd", as: DeflateEnd.self),
            let deflateBound = symbol("deflateBound", as: DeflateBound.self),
            let zlibVersion = symbol("zlibVersion", as: ZlibVersion.self),
            let versionPointer = zlibVersion()
        else {
            return nil
        }
        let versionText = String(cString: versionPointer)
        guard versionText.hasPrefix("1."), versionText.utf8.allSatisfy({ EntityTag.isTagCharacter($0) }) else {
            return nil
        }
        self.deflateInit2 = deflateInit2
        self.deflate = deflate
        self.deflateEnd = deflateEnd
        self.deflateBound = deflateBound
        self.version = Array(versionText.utf8CString)
        self.level = level
        self.coding = "gzip\(level)-z\(versionText)"
        // A round trip of a known input proves the layout before any client sees output.
        guard let probe = compress(Array(repeating: UInt8(ascii: "a"), count: 64)), probe.count > 18,
            probe[0] == 0x1F, probe[1] == 0x8B
        else {
            return nil
        }
    }

    private enum Offset {
        static let nextIn = 0
        static let availIn = 8
        static let nextOut = 24
        static let availOut = 32
        static let totalOut = 40
        static let size = 112
    }

    private static let finish: Int32 = 4
    private static let streamEnd: Int32 = 1
    private static let deflated: Int32 = 8

    /// `input` as a gzip member (no file name, modification time 0), or `nil` if zlib failed.
    ///
    /// The window and hash sizes follow the input's size (a 2 KiB body gets a 2 KiB window), so a small body
    /// does not pay for zlib's full 256 KiB of state; they are a function of the input, so the output stays
    /// deterministic.
    ///
    /// - Complexity: O(n) in the input's length.
    func compress(_ input: [UInt8]) -> [UInt8]? {
        guard input.count <= Int(UInt32.max) else { return nil }
        var windowBits: Int32 = 9
        while windowBits < 15 && (1 << windowBits) < input.count { windowBits += 1 }
        let memoryLevel = max(1, min(8, windowBits - 7))
        let stream = UnsafeMutableRawPointer.allocate(byteCount: Offset.size, alignment: 8)
        stream.initializeMemory(as: UInt8.self, repeating: 0, count: Offset.size)
        defer { stream.deallocate() }
        let status = version.withUnsafeBufferPointer { version in
            deflateInit2(
                stream,
                level,
                Self.deflated,
                16 + windowBits,
                memoryLevel,
                0,
                version.baseAddress,
                Int32(Offset.size)
            )
        }
        guard status == 0 else { return nil }
        defer { _ = deflateEnd(stream) }
        let bound = Int(deflateBound(stream, UInt(input.count)))
        var failed = false
        let output = [UInt8](unsafeUninitializedCapacity: bound) { buffer, count in
            input.withUnsafeBufferPointer { source in
                stream.storeBytes(
                    of: UnsafeRawPointer(source.baseAddress),
                    toByteOffset: Offset.nextIn,
                    as: UnsafeRawPointer?.self
                )
                stream.storeBytes(of: UInt32(source.count), toByteOffset: Offset.availIn, as: UInt32.self)
                stream.storeBytes(
                    of: UnsafeMutableRawPointer(buffer.baseAddress),
                    toByteOffset: Offset.nextOut,
                    as: UnsafeMutableRawPointer?.self
                )
                stream.storeBytes(of: UInt32(buffer.count), toByteOffset: Offset.availOut, as: UInt32.self)
                if deflate(stream, Self.finish) == Self.streamEnd {
                    count = Int(stream.load(fromByteOffset: Offset.totalOut, as: UInt.self))
                } else {
                    failed = true
                    count = 0
                }
            }
        }
        return failed || output.count > bound ? nil : output
    }
}
