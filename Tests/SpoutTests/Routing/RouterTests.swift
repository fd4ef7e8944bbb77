import Testing

@testable import Spout

/// The routes both suites match against: a literal, a parameter, a literal beside a parameter, a
/// parameter mid-path, and a POST-only path.
private func sampleRouter() -> Router<String> {
    var router = Router<String>()
    router.add("GET", "/health", "health")
    router.add("GET", "/articles/{id}", "article")
    router.add("GET", "/articles/stream", "stream")
    router.add("GET", "/users/{id}/profile", "profile")
    router.add("POST", "/echo", "echo")
    return router
}

@Suite struct RouterTests {
    private var router: Router<String> { sampleRouter() }

    private func handler(_ method: String, _ path: String) -> String? {
        if case .found(let route, _) = router.match(method: method, path: Substring(path)) { return route.handler }
        return nil
    }

    @Test func literalsBeatParametersAndParametersBind() {
        #expect(handler("GET", "/articles/stream") == "stream")
        #expect(handler("GET", "/articles/12") == "article")
        guard case .found(let route, let parameters) = router.match(method: "GET", path: "/users/7/profile") else {
            Issue.record("no match")
            return
        }
        #expect(route.pattern == "/users/{id}/profile")
        #expect(parameters == ["id": "7"])
    }

    @Test func headFallsBackToGetAndTrailingSlashesAreIgnored() {
        #expect(handler("HEAD", "/health") == "health")
        #expect(handler("GET", "/health/") == "health")
    }

    @Test func wrongMethodIsNotAllowedWithTheAllowedList() {
        guard case .methodNotAllowed(let allowed) = router.match(method: "DELETE", path: "/health") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == ["GET", "HEAD"])
        guard case .methodNotAllowed(let postOnly) = router.match(method: "GET", path: "/echo") else {
            Issue.record("expected 405")
            return
        }
        #expect(postOnly == ["POST"])
    }

    @Test func unknownPathsAreNotFound() {
        for path in ["/", "/nope", "/users/7", "/users/7/profile/extra", "/articles"] {
            guard case .notFound = router.match(method: "GET", path: Substring(path)) else {
                Issue.record("\(path) should not match")
                continue
            }
        }
    }
}

@Suite struct RouterBytesTests {
    private var router: Router<String> { sampleRouter() }

    @Test func routesKnowTheirRegistrationIndexWhateverTheMatchOrder() {
        let router = router
        #expect(router.patterns == ["/health", "/articles/{id}", "/articles/stream", "/users/{id}/profile", "/echo"])
        for path in ["/health", "/articles/3", "/articles/stream", "/users/9/profile"] {
            guard case .found(let route, _) = router.match(method: "GET", path: Substring(path)) else {
                Issue.record("\(path) should match")
                continue
            }
            #expect(router.patterns[route.index] == route.pattern)
        }
    }

    @Test func repeatedSlashesAreIgnoredAndParametersAreTheRawPieces() {
        guard case .found(let route, let parameters) = router.match(method: "GET", path: "//users//a%20b///profile/")
        else {
            Issue.record("no match")
            return
        }
        #expect(route.handler == "profile")
        #expect(parameters == ["id": "a%20b"])
    }

    @Test func nonASCIIPathsMatchAsCharacters() {
        guard case .found(let route, let parameters) = router.match(method: "GET", path: "/articles/café") else {
            Issue.record("no match")
            return
        }
        #expect(route.handler == "article")
        #expect(parameters == ["id": "café"])
        // A combining accent after "/" makes one character with it, so that "/" separates nothing.
        guard case .notFound = router.match(method: "GET", path: "/articles/\u{301}stream") else {
            Issue.record("a slash with a combining mark is no separator")
            return
        }
    }

    @Test func aLiteralPrefixOfAPieceDoesNotMatch() {
        for path in ["/healthy", "/healt", "/articles/streams/x", "/users/7/profiles"] {
            guard case .notFound = router.match(method: "GET", path: Substring(path)) else {
                Issue.record("\(path) should not match")
                continue
            }
        }
    }
}

/// The matched route's `{name}` segments: looked up by name, set once per name, compared without order.
@Suite struct PathParametersTests {
    @Test func looksUpReplacesAndRemovesByName() {
        var parameters = PathParameters()
        #expect(parameters.isEmpty)
        #expect(parameters["id"] == nil)
        parameters["id"] = "7"
        parameters["name"] = "fibonacci"
        #expect(parameters["id"] == "7")
        #expect(parameters["name"] == "fibonacci")
        #expect(parameters["ID"] == nil)
        parameters["id"] = "8"
        #expect(parameters["id"] == "8")
        #expect(parameters == ["name": "fibonacci", "id": "8"])
        parameters["id"] = nil
        #expect(parameters["id"] == nil)
        #expect(parameters == ["name": "fibonacci"])
    }

    @Test func equalityIsBySameNamesAndValues() {
        let parameters: PathParameters = ["a": "1", "b": "2"]
        #expect(parameters == ["b": "2", "a": "1"])
        #expect(parameters != ["a": "1"])
        #expect(parameters != ["a": "1", "b": "3"])
        #expect(parameters != ["a": "1", "c": "2"])
        #expect(PathParameters() == [:])
    }

    /// The first two are kept apart from the rest: any number works, in any order of setting and removing.
    @Test func moreThanTwoAndRemovalsInAnyPlace() {
        var parameters: PathParameters = ["a": "1", "b": "2", "c": "3", "d": "4"]
        for (name, value) in [("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")] {
            #expect(parameters[name] == value, "\(name)")
        }
        parameters["a"] = nil
        parameters["c"] = nil
        #expect(parameters == ["b": "2", "d": "4"])
        parameters["e"] = "5"  // into the place "a" left
        parameters["d"] = "40"
        #expect(parameters["e"] == "5" && parameters["d"] == "40" && parameters["a"] == nil)
        #expect(parameters == ["d": "40", "e": "5", "b": "2"])
        #expect(parameters != ["d": "40", "e": "5", "b": "2", "a": "1"])
        parameters["b"] = nil
        parameters["d"] = nil
        parameters["e"] = nil
        #expect(parameters.isEmpty && parameters == [:])
    }
}
