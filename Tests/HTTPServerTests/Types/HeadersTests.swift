import Testing

@testable import HTTPServer

@Suite struct HeadersTests {
    @Test func lookupIgnoresCaseAndReturnsFirstValue() {
        let headers: Headers = ["Content-Type": "text/plain", "X-Tag": "a", "x-tag": "b"]
        #expect(headers["content-type"] == "text/plain")
        #expect(headers["CONTENT-TYPE"] == "text/plain")
        #expect(headers["X-TAG"] == "a")
        #expect(headers.values(for: "x-Tag") == ["a", "b"])
        #expect(headers["missing"] == nil)
        #expect(headers.contains("x-tag"))
        #expect(!headers.contains("x-ta"))
        #expect(!headers.contains("x-tags"))
        #expect(headers.count == 3)
    }

    @Test func caseFoldingIsASCIIOnly() {
        let headers: Headers = ["X-\u{c9}t\u{e9}": "1", "[": "2"]
        #expect(headers["x-\u{c9}T\u{e9}"] == "1")
        #expect(headers["x-\u{e9}t\u{e9}"] == nil)
        // '[' is 0x5B and '{' is 0x7B: only letters fold.
        #expect(headers["{"] == nil)
        #expect(headers["["] == "2")
    }

    @Test func longNamesCompareIgnoringCase() {
        let name = String(String("Content-Length-Extra-Long-Name".reversed()).reversed())
        let headers = Headers([(name: name, value: "v")])
        #expect(headers["content-length-extra-long-name"] == "v")
    }

    @Test func iterationKeepsOrderAndOriginalCase() {
        let headers: Headers = ["B": "1", "a": "2", "b": "3"]
        #expect(headers.map { "\($0.name)=\($0.value)" } == ["B=1", "a=2", "b=3"])
    }

    @Test func addKeepsDuplicates() {
        var headers = Headers()
        #expect(headers.isEmpty)
        headers.add(name: "Set-Cookie", value: "a=1")
        headers.add(name: "set-cookie", value: "b=2")
        #expect(headers.values(for: "SET-COOKIE") == ["a=1", "b=2"])
        #expect(headers.count == 2)
    }

    @Test func replaceOrAddReplacesFirstInPlaceAndDropsTheRest() {
        var headers: Headers = ["A": "1", "X": "old", "B": "2", "x": "older"]
        headers.replaceOrAdd(name: "X", value: "new")
        #expect(headers.map { "\($0.name)=\($0.value)" } == ["A=1", "X=new", "B=2"])
        headers.replaceOrAdd(name: "C", value: "3")
        #expect(headers.map { "\($0.name)=\($0.value)" } == ["A=1", "X=new", "B=2", "C=3"])
    }

    @Test func removeDropsEveryMatch() {
        var headers: Headers = ["A": "1", "X": "a", "x": "b"]
        headers.remove(name: "X")
        #expect(headers.map(\.name) == ["A"])
        headers.remove(name: "missing")
        #expect(headers.count == 1)
    }

    @Test func equalityIsExactAndOrdered() {
        let ab: Headers = ["A": "1", "B": "2"]
        #expect(ab == ["A": "1", "B": "2"])
        #expect(ab != ["B": "2", "A": "1"])
        #expect(Headers([(name: "A", value: "1")]) != ["a": "1"])
    }

    @Test func equalityIgnoresBytesLeftByRemovedFields() {
        var edited: Headers = ["Drop": "x", "A": "1"]
        edited.remove(name: "drop")
        edited.replaceOrAdd(name: "A", value: "1")
        #expect(edited == ["A": "1"])
    }

    @Test func fieldLinesAreWrittenInOrder() {
        var headers: Headers = ["Content-Type": "text/plain", "X-Empty": ""]
        headers.add(name: "Set-Cookie", value: "a=1")
        var buffer = Array("HTTP/1.1 200 OK\r\n".utf8)
        headers.appendFieldLines(to: &buffer)
        let expected = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Empty: \r\nSet-Cookie: a=1\r\n"
        #expect(String(decoding: buffer, as: UTF8.self) == expected)
    }

    @Test func writingValidationCatchesHeaderInjection() {
        let good: Headers = ["Content-Type": "text/plain", "X-Tab": "a\tb", "X-Empty": ""]
        #expect(good.isValidForWriting)
        let bad: [Headers] = [["X-Evil": "a\r\nSet-Cookie: b"], ["X-Evil": "a\nb"], ["Bad Name": "v"], ["": "v"]]
        for headers in bad {
            #expect(!headers.isValidForWriting)
        }
    }

    @Test func parsedValuesWithObsTextReadAsReplacementCharacters() throws {
        var parser = RequestParser()
        parser.append(Array("GET / HTTP/1.1\r\nHost: a\r\nX-Bin: a".utf8) + [0xFF] + Array("b\r\n\r\n".utf8))
        guard case .head(let head) = try parser.next() else {
            Issue.record("expected a head")
            return
        }
        #expect(head.headers["x-bin"] == "a\u{FFFD}b")
    }
}
