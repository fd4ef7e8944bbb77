/// "Did you mean …?": the known name closest to a mistyped one.
enum Suggestion {
    /// The name among `candidates` closest to `name` by edit distance (ignoring ASCII case), if it is close
    /// enough to be a typo of it: at most a third of the longer name's length, and at most 4 edits.
    static func closest(to name: String, among candidates: [String]) -> String? {
        let wanted = Array(name.lowercased().utf8)
        var best: (name: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(wanted, Array(candidate.lowercased().utf8))
            let limit = min(4, max(1, max(wanted.count, candidate.utf8.count) / 3))
            guard distance <= limit else { continue }
            if best == nil || distance < best!.distance { best = (candidate, distance) }
        }
        return best?.name
    }

    /// The Levenshtein distance (insertions, deletions, substitutions, and a swap of two neighbours counted
    /// as one edit) between two byte strings.
    ///
    /// - Complexity: O(a × b) time, O(b) memory.
    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var beforePrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], beforePrevious[j - 2] + 1)
                }
            }
            (beforePrevious, previous, current) = (previous, current, beforePrevious)
        }
        return previous[b.count]
    }
}
