import OpenSSL
import Testing

@Suite struct SharedLibraryTests {
    @Test func opensTheFirstLibraryThatLoadsAndLooksUpItsFunctions() throws {
        // libc is on every machine; the first name does not exist.
        let library = try #require(SharedLibrary(["libdoes-not-exist.so.9", "libc.so.6"]))
        let strlen = try #require(
            library.function("strlen", as: (@convention(c) (UnsafePointer<CChar>?) -> Int).self)
        )
        #expect("spout".withCString { strlen($0) } == 5)
        #expect(library.function("no_such_function_in_libc", as: (@convention(c) () -> Void).self) == nil)
    }

    @Test func noLibraryThatLoadsIsNil() {
        #expect(SharedLibrary(["libdoes-not-exist.so.9"]) == nil)
    }
}
