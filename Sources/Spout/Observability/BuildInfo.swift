/// What build this binary is: `spout --version` and `spout_build_info{version,revision}`.
///
/// SwiftPM without plugins cannot generate a source file at build time, and Spout takes no plugin, so:
/// - ``version`` is a constant here, bumped by hand with each release;
/// - ``revision`` is `"unknown"` in the repository; the `Dockerfile` replaces it with its `SPOUT_REVISION` build
///   argument (`docker build --build-arg SPOUT_REVISION=$(git rev-parse --short HEAD) .`) before it compiles, the
///   one line below being the only thing it rewrites. A plain `swift build` keeps `"unknown"`: a revision that
///   cannot be told is said to be unknown rather than guessed.
public enum BuildInfo {
    /// The release version.
    public static let version = "0.9.0"
    /// The source revision the binary was built from, or `unknown`.
    public static let revision = "unknown"  // SPOUT_REVISION (rewritten by the Dockerfile)

    /// `spout 0.9.0 (revision unknown)`.
    public static var versionLine: String { "spout \(version) (revision \(revision))" }
}
