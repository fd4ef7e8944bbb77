/// The JSON Spout writes for the upstream's records: the JSONPlaceholder field names, in the
/// JSONPlaceholder order, written by hand like every other document Spout sends.

extension Post {
    /// `{"userId":…,"id":…,"title":…,"body":…}`.
    var jsonBytes: [UInt8] {
        var object = JSONObjectWriter()
        object.add("userId", userId)
        object.add("id", id)
        object.add("title", title)
        object.add("body", body)
        return object.finish()
    }
}

extension User {
    /// `{"id":…,"name":…,"username":…,"email":…}`, then `phone` and `website` when present.
    var jsonBytes: [UInt8] {
        var object = JSONObjectWriter()
        object.add("id", id)
        object.add("name", name)
        object.add("username", username)
        object.add("email", email)
        if let phone { object.add("phone", phone) }
        if let website { object.add("website", website) }
        return object.finish()
    }
}

extension Todo {
    /// `{"userId":…,"id":…,"title":…,"completed":…}`.
    var jsonBytes: [UInt8] {
        var object = JSONObjectWriter()
        object.add("userId", userId)
        object.add("id", id)
        object.add("title", title)
        object.add("completed", completed)
        return object.finish()
    }
}

extension Comment {
    /// `{"postId":…,"id":…,"name":…,"email":…,"body":…}`.
    var jsonBytes: [UInt8] {
        var object = JSONObjectWriter()
        object.add("postId", postId)
        object.add("id", id)
        object.add("name", name)
        object.add("email", email)
        object.add("body", body)
        return object.finish()
    }
}

extension Album {
    /// `{"userId":…,"id":…,"title":…}`.
    var jsonBytes: [UInt8] {
        var object = JSONObjectWriter()
        object.add("userId", userId)
        object.add("id", id)
        object.add("title", title)
        return object.finish()
    }
}

extension JSONText {
    /// Appends `[a,b,…]` with each element's JSON.
    static func appendArray<C: Collection>(_ elements: C, to bytes: inout [UInt8], _ json: (C.Element) -> [UInt8]) {
        bytes.append(UInt8(ascii: "["))
        var first = true
        for element in elements {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            bytes.append(contentsOf: json(element))
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// `[a,b,…]` with each element's JSON.
    static func array<C: Collection>(_ elements: C, _ json: (C.Element) -> [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        appendArray(elements, to: &bytes, json)
        return bytes
    }
}
