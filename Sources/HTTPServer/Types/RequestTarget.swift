/// Where the path and query sit inside a request-target (RFC 9112 §3.2).
///
/// **Ownership:** A value computed from, and describing, a target's bytes.
/// **Thread safety:** Value type; not shared.
struct RequestTarget: Equatable {
    /// The four request-target forms.
    enum Form: Equatable {
        /// `/path?query`.
        case origin
        /// `http://host/path?query`.
        case absolute
        /// `host:port`, only meaningful for CONNECT.
        case authority
        /// `*`, only meaningful for OPTIONS.
        case asterisk
    }

    var form: Form
    /// Byte range of the path inside the target; empty for an absolute-form target without a path (meaning `/`).
    var path: Range<Int>
    /// Byte range of the query (without `?`), or nil when the target has no `?`.
    var query: Range<Int>?

    /// Splits `bytes` without validating them; any input yields some split.
    init(splitting bytes: UnsafeBufferPointer<UInt8>) {
        let count = bytes.count
        if count == 1 && bytes[0] == ASCII.asterisk {
            self.init(form: .asterisk, path: 0..<1, query: nil)
            return
        }
        var pathStart = 0
        var form = Form.origin
        if count == 0 || bytes[0] != ASCII.slash {
            guard let authorityStart = RequestTarget.authorityStart(bytes) else {
                self.init(form: .authority, path: 0..<count, query: nil)
                return
            }
            form = .absolute
            pathStart = authorityStart
            while pathStart < count && bytes[pathStart] != ASCII.slash && bytes[pathStart] != ASCII.questionMark {
                pathStart += 1
            }
        }
        var pathEnd = pathStart
        while pathEnd < count && bytes[pathEnd] != ASCII.questionMark {
            pathEnd += 1
        }
        let query = pathEnd < count ? (pathEnd + 1)..<count : nil
        self.init(form: form, path: pathStart..<pathEnd, query: query)
    }

    private init(form: Form, path: Range<Int>, query: Range<Int>?) {
        self.form = form
        self.path = path
        self.query = query
    }

    /// The index after `http://` or `https://` (scheme compared ignoring case), or nil for any other prefix.
    private static func authorityStart(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        for (scheme, length) in [("http://" as StaticString, 7), ("https://", 8)] where bytes.count >= length {
            if ASCII.caseInsensitiveEquals(UnsafeBufferPointer(rebasing: bytes[0..<length]), lowercaseLiteral: scheme) {
                return length
            }
        }
        return nil
    }
}
