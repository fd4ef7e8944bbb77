import Testing

@testable import HTTPServer

@Suite struct RequestHeadTests {
    private func items(_ query: String) -> [[String]] {
        RequestHead(method: .get, target: "/?" + query).queryItems.map { [$0.name, $0.value] }
    }

    @Test func queryItemsDecodePercentAndPlus() {
        #expect(
            items("a=1&b=two+words&c=%E2%9C%93&d=%2b") == [
                ["a", "1"], ["b", "two words"], ["c", "\u{2713}"], ["d", "+"],
            ]
        )
    }

    @Test func queryItemsKeepMalformedEscapes() {
        #expect(
            items("a=%&b=%4&c=%zz&d=%4g&e=100%") == [
                ["a", "%"], ["b", "%4"], ["c", "%zz"], ["d", "%4g"], ["e", "100%"],
            ]
        )
    }

    @Test func queryItemsReplaceInvalidUTF8() {
        #expect(items("a=%FF%FE") == [["a", "\u{FFFD}\u{FFFD}"]])
    }

    @Test func queryItemsSkipEmptyPairsAndDefaultValues() {
        #expect(items("&&flag&=x&k=&k=2&a=b=c") == [["flag", ""], ["", "x"], ["k", ""], ["k", "2"], ["a", "b=c"]])
        #expect(items("") == [])
        #expect(RequestHead(method: .get, target: "/").queryItems.isEmpty)
    }

    @Test func queryItemsDecodeNamesToo() {
        #expect(items("na%6De=v&a+b=c") == [["name", "v"], ["a b", "c"]])
    }

    @Test func initDerivesPathQueryAndFlags() {
        let head = RequestHead(
            method: .post,
            target: "http://h/p/q?x=1",
            version: .http1_1,
            headers: ["Host": "h", "Expect": "100-continue", "Connection": "close"]
        )
        #expect(head.path == "/p/q")
        #expect(head.query == "x=1")
        #expect(head.keepAlive == false)
        #expect(head.expectsContinue == true)

        let old = RequestHead(method: .get, target: "/", version: .http1_0, headers: ["Connection": " Keep-Alive "])
        #expect(old.keepAlive == true)
        #expect(old.expectsContinue == false)
        #expect(RequestHead(method: .get, target: "/", version: .http1_0).keepAlive == false)
        #expect(RequestHead(method: .get, target: "/").keepAlive == true)
    }

    @Test func requestForwardsItsHead() {
        let head = RequestHead(method: .put, target: "/a?b=c", headers: ["Host": "h"])
        let request = Request(head: head, body: [1, 2, 3])
        #expect(request.method == .put)
        #expect(request.path == "/a")
        #expect(request.query == "b=c")
        #expect(request.queryItems.map(\.value) == ["c"])
        #expect(request.headers["host"] == "h")
        #expect(request.version == .http1_1)
        #expect(request.keepAlive)
        #expect(request.body == [1, 2, 3])
    }
}

@Suite struct StatusAndMethodTests {
    @Test func statusEqualityUsesTheCodeOnly() {
        #expect(Status(code: 200, reasonPhrase: "Fine") == .ok)
        #expect(Status(code: 200, reasonPhrase: "Fine").hashValue == Status.ok.hashValue)
        #expect(Status.ok != .created)
    }

    @Test func statusFromCodeUsesTheStandardPhrase() {
        #expect(Status(code: 404).reasonPhrase == "Not Found")
        #expect(Status(code: 431).reasonPhrase == "Request Header Fields Too Large")
        #expect(Status(code: 799).reasonPhrase == "")
        #expect(Status(code: 799).description == "799")
        #expect(Status.notFound.description == "404 Not Found")
    }

    @Test func commonStatusCodes() {
        let expected: [(Status, Int)] = [
            (.continue, 100), (.ok, 200), (.noContent, 204), (.badRequest, 400), (.lengthRequired, 411),
            (.payloadTooLarge, 413), (.uriTooLong, 414), (.expectationFailed, 417),
            (.requestHeaderFieldsTooLarge, 431), (.notImplemented, 501), (.httpVersionNotSupported, 505),
        ]
        for (status, code) in expected {
            #expect(status.code == code)
        }
    }

    @Test func bodylessStatuses() {
        #expect(!Status.continue.allowsBody)
        #expect(!Status.noContent.allowsBody)
        #expect(!Status.notModified.allowsBody)
        #expect(Status.ok.allowsBody)
        #expect(Status.notFound.allowsBody)
    }

    @Test func methodsAreCaseSensitive() {
        #expect(Method("GET") == .get)
        #expect(Method("get") != .get)
        #expect(Method.patch.description == "PATCH")
        #expect(Version.http1_1.description == "HTTP/1.1")
        #expect(Version.http1_0 < .http1_1)
        #expect(Version(major: 1, minor: 2) > .http1_1)
        #expect(Version(major: 2, minor: 0) > Version(major: 1, minor: 9))
    }
}
