import Glibc

extension Socket {
    /// Sets `errno` and returns -1, like a failing call (for tests of the wrapper).
    package static func setErrno(_ code: Int32) -> Int {
        Glibc.errno = code
        return -1
    }
}
