import Synchronization

/// A type that can identify itself in a stream by a ``CombineIdentifier``.
public protocol CustomCombineIdentifierConvertible {
    /// The identifier of this stream element.
    var combineIdentifier: CombineIdentifier { get }
}

extension CustomCombineIdentifierConvertible where Self: AnyObject {
    public var combineIdentifier: CombineIdentifier {
        CombineIdentifier(self)
    }
}
