/// How the service recognises its own upstream client calling its demo routes (`/demo/...`, used while no
/// upstream is configured), so that those calls are not counted or logged as client traffic.
///
/// The upstream client of a service without a configured upstream sends ``headerName`` with ``token``, a
/// 128-bit random value drawn once per process. A request counts as a self-call only when all three hold:
/// its path is under `/demo/`, it carries exactly this token, and it comes from a loopback address. A client
/// cannot hide its traffic by sending the header: it would have to guess the token, which never leaves the
/// process except over loopback to the process itself (it is not sent to a configured upstream, and not
/// logged). A request with a wrong token is ordinary traffic. `log.selfCalls: true` counts and logs self-calls
/// too.
///
/// **Thread safety:** immutable.
enum SelfCall {
    /// The request header that carries the token.
    static let headerName = "X-Spout-Self-Call"

    /// This process's token: 32 lowercase hex digits.
    static let token: String = {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        Hex.append(generator.next(), digits: 16, to: &bytes)
        Hex.append(generator.next(), digits: 16, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }()

    /// Whether `path` starts with `/demo/`, compared byte by byte (the check every request pays).
    @inline(__always)
    static func hasDemoPrefix(_ path: String) -> Bool {
        var bytes = path.utf8.makeIterator()
        for expected in "/demo/".utf8 {
            guard bytes.next() == expected else { return false }
        }
        return bytes.next() != nil
    }

    /// Whether a request with this path, remote address and header value is the service calling itself.
    /// The header is only looked up for `/demo/` paths, so other requests pay one prefix check.
    static func isSelfCall(path: String, remoteAddress: String, headerValue: @autoclosure () -> String?) -> Bool {
        guard hasDemoPrefix(path), let headerValue = headerValue() else { return false }
        guard PeerTrust.isLoopback(remoteAddress) else { return false }
        return PeerTrust.equalInConstantTime(Array(headerValue.utf8), Array(token.utf8))
    }
}
