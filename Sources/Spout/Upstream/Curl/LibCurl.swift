import Foundation
import Glibc

/// The parts of libcurl's easy and multi interfaces that ``CurlDriver`` uses, loaded at run time with
/// `dlopen("libcurl.so.4")`.
///
/// **Why libcurl, and why loaded.** FoundationNetworking is itself built on `libcurl.so.4`, so the library
/// is on every machine where Spout runs (the process would not start without it); `swift build` needs
/// neither it nor its headers, as with zlib (``Gzip``). Driving libcurl directly instead of through
/// `URLSession` is what lets a transfer end when Spout says so: see ``CurlDriver`` for what `URLSession`
/// did with a runaway body.
///
/// **Variadic calls.** `curl_easy_setopt` is a C variadic function, which Swift
/// cannot call through a function pointer. It is called through non-variadic prototypes with one
/// trailing argument of the option's type (a `long`, a pointer or a function pointer). On the two ABIs
/// this file allows that is exactly how the variadic call passes it: System V x86-64 passes variadic
/// integer and pointer arguments in the same registers as named ones (`%al`, which the caller of a
/// variadic function sets, only bounds how many vector registers the callee spills), and AAPCS64 on
/// Linux passes them like named arguments too. Elsewhere ``shared`` is `nil`.
///
/// **Ownership:** one process-wide instance; the library handle is never closed.
///
/// **Thread safety:** the functions are libcurl's: a multi handle and its easy handles are used by one
/// thread at a time (``CurlDriver``'s), `curl_multi_wakeup` from any thread.
final class LibCurl: @unchecked Sendable {
    // @unchecked Sendable: every stored property is an immutable C function pointer or value.
    typealias Callback =
        @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int

    let easyInit: @convention(c) () -> OpaquePointer?
    let easyCleanup: @convention(c) (OpaquePointer?) -> Void
    private let setoptLong: @convention(c) (OpaquePointer?, Int32, Int) -> Int32
    private let setoptPointer: @convention(c) (OpaquePointer?, Int32, UnsafeRawPointer?) -> Int32
    let strerror: @convention(c) (Int32) -> UnsafePointer<CChar>?
    let slistAppend: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> OpaquePointer?
    let slistFreeAll: @convention(c) (OpaquePointer?) -> Void
    let multiInit: @convention(c) () -> OpaquePointer?
    let multiCleanup: @convention(c) (OpaquePointer?) -> Int32
    let multiAdd: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32
    let multiRemove: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32
    let multiPerform: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?) -> Int32
    let multiPoll:
        @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?) -> Int32
    let multiWakeup: @convention(c) (OpaquePointer?) -> Int32
    let multiInfoRead: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?) -> UnsafeMutableRawPointer?

    /// The loaded library, or `nil` when `libcurl.so.4` is missing, older than 7.68 (the first with
    /// `curl_multi_wakeup`) or on an ABI this file does not call variadic functions on.
    static let shared: LibCurl? = LibCurl(library: "libcurl.so.4")

    /// Loads `library` and checks its version.
    init?(library: String) {
        #if !(arch(x86_64) || arch(arm64))
            return nil
        #endif
        guard MemoryLayout<Int>.size == 8, let handle = dlopen(library, RTLD_NOW | RTLD_LOCAL) else { return nil }
        func symbol<F>(_ name: String, as type: F.Type) -> F? {
            dlsym(handle, name).map { unsafeBitCast($0, to: type) }
        }
        typealias GlobalInit = @convention(c) (Int) -> Int32
        typealias VersionInfo = @convention(c) (Int32) -> UnsafeRawPointer?
        guard let globalInit = symbol("curl_global_init", as: GlobalInit.self),
            let versionInfo = symbol("curl_version_info", as: VersionInfo.self),
            let easyInit = symbol("curl_easy_init", as: (@convention(c) () -> OpaquePointer?).self),
            let easyCleanup = symbol("curl_easy_cleanup", as: (@convention(c) (OpaquePointer?) -> Void).self),
            let setoptLong = symbol(
                "curl_easy_setopt",
                as: (@convention(c) (OpaquePointer?, Int32, Int) -> Int32).self
            ),
            let setoptPointer = symbol(
                "curl_easy_setopt",
                as: (@convention(c) (OpaquePointer?, Int32, UnsafeRawPointer?) -> Int32).self
            ),
            let strerror = symbol("curl_easy_strerror", as: (@convention(c) (Int32) -> UnsafePointer<CChar>?).self),
            let slistAppend = symbol(
                "curl_slist_append",
                as: (@convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> OpaquePointer?).self
            ),
            let slistFreeAll = symbol("curl_slist_free_all", as: (@convention(c) (OpaquePointer?) -> Void).self),
            let multiInit = symbol("curl_multi_init", as: (@convention(c) () -> OpaquePointer?).self),
            let multiCleanup = symbol("curl_multi_cleanup", as: (@convention(c) (OpaquePointer?) -> Int32).self),
            let multiAdd = symbol(
                "curl_multi_add_handle",
                as: (@convention(c) (OpaquePointer?, OpaquePointer?) -> Int32).self
            ),
            let multiRemove = symbol(
                "curl_multi_remove_handle",
                as: (@convention(c) (OpaquePointer?, OpaquePointer?) -> Int32).self
            ),
            let multiPerform = symbol(
                "curl_multi_perform",
                as: (@convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?) -> Int32).self
            ),
            let multiPoll = symbol(
                "curl_multi_poll",
                as: (@convention(c) (
                    OpaquePointer?, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutablePointer<Int32>?
                ) -> Int32).self
            ),
            let multiWakeup = symbol("curl_multi_wakeup", as: (@convention(c) (OpaquePointer?) -> Int32).self),
            let multiInfoRead = symbol(
                "curl_multi_info_read",
                as: (@convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?) -> UnsafeMutableRawPointer?).self
            ),
            // curl_version_info_data: an int (padded to 8), `const char *version`, `unsigned int version_num`.
            let info = versionInfo(0)
        else {
            return nil
        }
        let versionNumber = info.load(fromByteOffset: 16, as: UInt32.self)
        // 7.68.0: curl_multi_wakeup (curl_multi_poll is 7.66.0). Global init is reference-counted and,
        // from 7.84, thread-safe; FoundationNetworking calls it too.
        guard versionNumber >= 0x07_44_00, globalInit(Self.globalDefault) == 0 else { return nil }
        self.easyInit = easyInit
        self.easyCleanup = easyCleanup
        self.setoptLong = setoptLong
        self.setoptPointer = setoptPointer
        self.strerror = strerror
        self.slistAppend = slistAppend
        self.slistFreeAll = slistFreeAll
        self.multiInit = multiInit
        self.multiCleanup = multiCleanup
        self.multiAdd = multiAdd
        self.multiRemove = multiRemove
        self.multiPerform = multiPerform
        self.multiPoll = multiPoll
        self.multiWakeup = multiWakeup
        self.multiInfoRead = multiInfoRead
    }

    /// `CURL_GLOBAL_SSL | CURL_GLOBAL_WIN32`.
    private static let globalDefault = 3

    /// The options ``CurlDriver`` sets (`CURLOPT_*`: a type base, 0 for `long`, 10000 for pointers, 20000
    /// for function pointers, plus the option's number).
    enum Option: Int32 {
        case writeData = 10001
        case url = 10002
        case writeFunction = 20011
        case httpHeader = 10023
        case headerData = 10029
        case followLocation = 52
        case maxRedirects = 68
        case httpGet = 80
        case noSignal = 99
        case acceptEncoding = 10102
        case timeoutMilliseconds = 155
        case connectTimeoutMilliseconds = 156
        case headerFunction = 20079
        case protocols = 181
        case redirectProtocols = 182
        case protocolsString = 10318
        case redirectProtocolsString = 10319
        case openSocketFunction = 20163
    }

    /// `CURLMSG_DONE`: a transfer of the multi handle ended.
    static let messageDone: Int32 = 1
    /// `CURLPROTO_HTTP | CURLPROTO_HTTPS`.
    static let httpProtocols = 3

    /// Sets a `long` option; returns libcurl's code (0 when set).
    @discardableResult
    func set(_ easy: OpaquePointer, _ option: Option, _ value: Int) -> Int32 {
        setoptLong(easy, option.rawValue, value)
    }

    /// Sets a pointer option (a string libcurl copies, a list, or a pointer handed back to callbacks).
    @discardableResult
    func set(_ easy: OpaquePointer, _ option: Option, pointer: UnsafeRawPointer?) -> Int32 {
        setoptPointer(easy, option.rawValue, pointer)
    }

    /// Sets a callback option.
    @discardableResult
    func set(_ easy: OpaquePointer, _ option: Option, callback: Callback) -> Int32 {
        setoptPointer(easy, option.rawValue, unsafeBitCast(callback, to: UnsafeRawPointer.self))
    }

    /// Makes `easy` open its sockets close-on-exec, atomically (`SOCK_CLOEXEC`): libcurl 7.x opens them
    /// without the flag, so a process spawned by anything else in this process at that moment (a test's exit
    /// test, a library's helper) would inherit a copy, and the connection would stay open in the child after
    /// the transfer closed it here. Returns libcurl's code.
    func openSocketsCloseOnExec(_ easy: OpaquePointer) -> Int32 {
        setoptPointer(
            easy,
            Option.openSocketFunction.rawValue,
            unsafeBitCast(Self.openSocket, to: UnsafeRawPointer.self)
        )
    }

    /// `curl_opensocket_callback`: `struct curl_sockaddr` starts with the `int`s `family`, `socktype` and
    /// `protocol`; returns the descriptor, or `CURL_SOCKET_BAD` (-1), which fails the connect.
    private static let openSocket: @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafeMutableRawPointer?) -> Int32 =
        { _, _, address in
            guard let address else { return -1 }
            let family = address.load(as: Int32.self)
            let type = address.load(fromByteOffset: 4, as: Int32.self)
            let proto = address.load(fromByteOffset: 8, as: Int32.self)
            return socket(family, type | Int32(SOCK_CLOEXEC.rawValue), proto)
        }

    /// Restricts `easy` (and the redirects it follows) to HTTP and HTTPS: with the string options of 7.85
    /// and later, else with the bitmask ones they deprecate. Returns whether both took.
    func restrictToHTTP(_ easy: OpaquePointer) -> Bool {
        let main =
            "http,https".withCString { set(easy, .protocolsString, pointer: $0) } == 0
            || set(easy, .protocols, Self.httpProtocols) == 0
        let redirects =
            "http,https".withCString { set(easy, .redirectProtocolsString, pointer: $0) } == 0
            || set(easy, .redirectProtocols, Self.httpProtocols) == 0
        return main && redirects
    }

    /// libcurl's text for `code` (`Couldn't connect to server`).
    func describe(_ code: Int32) -> String {
        strerror(code).map { String(cString: $0) } ?? "libcurl error \(code)"
    }
}
