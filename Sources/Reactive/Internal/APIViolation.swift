/// Traps on misuse of the library's own API: a demand of zero, a second subscription where
/// only one is allowed, and the like. Hostile *input* never comes here; it is handled.
@usableFromInline
package func apiViolation(_ message: @autoclosure () -> String, file: StaticString = #file, line: UInt = #line) -> Never
{
    preconditionFailure("API violation: \(message())", file: file, line: line)
}

/// Traps on a state a component's own logic should never reach: a bug in this library.
@usableFromInline
package func internalInconsistency(
    _ message: @autoclosure () -> String,
    file: StaticString = #file,
    line: UInt = #line
) -> Never {
    preconditionFailure("internal inconsistency: \(message())", file: file, line: line)
}
