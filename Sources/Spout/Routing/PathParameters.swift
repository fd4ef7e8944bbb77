/// The `{name}` segments of a matched route pattern and what the path held there (not percent-decoded).
///
/// A pattern has one or two of them, so they are kept as a list and looked up by a linear scan: a dictionary
/// cost an allocation and two hashes per request for a value read once.
///
/// **Thread safety:** value type.
struct PathParameters: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    private var pairs: [(name: String, value: String)] = []

    init() {}

    init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { self[name] = value }
    }

    /// The value of the segment called `name`; setting replaces an earlier value of the same name.
    subscript(name: String) -> String? {
        get { pairs.first { $0.name == name }?.value }
        set {
            let index = pairs.firstIndex { $0.name == name }
            switch (index, newValue) {
            case (let index?, let value?): pairs[index].value = value
            case (let index?, nil): pairs.remove(at: index)
            case (nil, let value?): pairs.append((name, value))
            case (nil, nil): break
            }
        }
    }

    var isEmpty: Bool { pairs.isEmpty }

    /// Equal when they name the same segments with the same values, in any order.
    static func == (lhs: PathParameters, rhs: PathParameters) -> Bool {
        lhs.pairs.count == rhs.pairs.count && lhs.pairs.allSatisfy { rhs[$0.name] == $0.value }
    }
}
