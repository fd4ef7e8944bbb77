/// A namespace for types that serve as publishers.
///
/// The operators on ``Publisher`` return the structs declared in extensions of this namespace.
public enum Publishers {}
