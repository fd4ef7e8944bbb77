/// Decodes `application/x-www-form-urlencoded`-style query strings.
///
/// **Ownership:** Stateless namespace.
/// **Thread safety:** Value type; not shared.
enum QueryDecoder {
    /// Splits and decodes `query`; see ``RequestHead/queryItems``.
    static func items(in query: String) -> [(name: String, value: String)] {
        var items: [(name: String, value: String)] = []
        for pair in query.utf8.split(separator: ASCII.ampersand, omittingEmptySubsequences: true) {
            if let equals = pair.firstIndex(of: ASCII.equals) {
                items.append((decode(pair[pair.startIndex..<equals]), decode(pair[pair.index(after: equals)...])))
            } else {
                items.append((decode(pair), ""))
            }
        }
        return items
    }

    /// Percent-decodes `bytes`, reading `+` as a space and keeping malformed escapes as they are.
    static func decode(_ bytes: Substring.UTF8View) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            index = bytes.index(after: index)
            switch byte {
            case ASCII.plus:
                output.append(ASCII.space)
            case ASCII.percent:
                guard index < bytes.endIndex, let high = ASCII.hexValue(bytes[index]) else {
                    output.append(byte)
                    continue
                }
                let next = bytes.index(after: index)
                guard next < bytes.endIndex, let low = ASCII.hexValue(bytes[next]) else {
                    output.append(byte)
                    continue
                }
                output.append(high &<< 4 | low)
                index = bytes.index(after: next)
            default:
                output.append(byte)
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
