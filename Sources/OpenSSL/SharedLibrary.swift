import Glibc

/// A system shared library opened at run time with `dlopen`, and typed lookups of its functions.
///
/// **Why at run time.** Spout builds with nothing but the Swift toolchain: no C headers, no `-l` flags.
/// OpenSSL 3 (`libcrypto.so.3`, `libssl.so.3`) is on every machine that runs Spout because
/// FoundationNetworking's libcurl links it; loading it here, as zlib and libcurl are loaded in `Spout`,
/// keeps `swift build` free of it while the process uses the library the operating system patches.
///
/// **Ownership:** the handle is never closed (the functions looked up in it stay valid for the process).
///
/// **Thread safety:** immutable after `init`; `dlsym` is thread-safe.
package struct SharedLibrary: @unchecked Sendable {
    // @unchecked Sendable: the handle is an immutable opaque pointer that is never closed.
    private let handle: UnsafeMutableRawPointer

    /// Opens the first of `names` that loads (`RTLD_NOW | RTLD_LOCAL`), or returns `nil` when none does.
    package init?(_ names: [String]) {
        guard MemoryLayout<Int>.size == 8 else { return nil }  // the bindings assume LP64
        for name in names {
            if let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) {
                self.handle = handle
                return
            }
        }
        return nil
    }

    /// The function `name` as a `@convention(c)` function type `F`, or `nil` when the library lacks it.
    ///
    /// The caller answers for `F` matching the C prototype; keep each prototype beside the C declaration
    /// it mirrors, in a comment, so a reader can check it.
    package func function<F>(_ name: String, as type: F.Type = F.self) -> F? {
        dlsym(handle, name).map { unsafeBitCast($0, to: type) }
    }
}
