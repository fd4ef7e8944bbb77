// libFuzzer entry point for the body of `POST /channels/{name}/events` (`ChannelPublishBody`,
// Sources/Spout/Channels/ChannelPublishBody.swift): bytes a client sends, read by `StrictJSONReader`, each `data`
// copied out as compact JSON. Besides "no input traps, leaks or hangs":
// - a body that is accepted is JSON: `ConfigJSON`, the tree built by the same reader, accepts it too;
// - each `data` is compact JSON of the same value: it parses to the tree the body held, and publishing it again
//   (`{"data":<data>}`) gives back the same bytes;
// - an accepted `event` type is at most 128 characters, holds no control character and is not a reserved type;
// - every refusal is a 400 or 413 problem with a bounded detail.

@testable import Spout

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let body: ChannelPublishBody
    do {
        body = try ChannelPublishBody(input, maxDataBytes: 4_096)
    } catch {
        if error.status != 400 && error.status != 413 { fatalError("refusal answered \(error.status): \(error)") }
        if error.detail.utf8.count > 1_024 { fatalError("refusal detail of \(error.detail.utf8.count) bytes") }
        return 0
    }
    guard let tree = try? ConfigJSON.parse(input) else { fatalError("accepted a body ConfigJSON refuses: \(input)") }
    if body.publications.isEmpty { fatalError("accepted a body with no event") }
    for (index, publication) in body.publications.enumerated() {
        checkData(publication.data, against: dataMember(of: tree, at: index, of: body.publications.count))
        if let type = publication.type {
            if type.unicodeScalars.count > ChannelPublishBody.maxTypeCharacters { fatalError("type \(type) too long") }
            if type.unicodeScalars.contains(where: ChannelPublishBody.isControl) { fatalError("control in \(type)") }
            if ChannelPublishBody.reservedTypes.contains(type) { fatalError("reserved type \(type) accepted") }
        }
    }
    return 0
}

/// The `data` member of the event at `index`, from the body's tree (an object, or an array of `count` of them).
private func dataMember(of tree: ConfigJSON, at index: Int, of count: Int) -> ConfigJSON {
    let object: ConfigJSON
    switch tree {
    case .object: object = tree
    case .array(let items) where items.count == count: object = items[index]
    default: fatalError("accepted body's tree is \(tree.summary) holding \(count) events")
    }
    guard case .object(let members) = object, let data = members.first(where: { $0.name == "data" }) else {
        fatalError("accepted event \(index) has no data member in \(tree)")
    }
    return data.value
}

/// `data` is the compact form of `value`, and compacting it again changes nothing.
private func checkData(_ data: [UInt8], against value: ConfigJSON) {
    guard let reread = try? ConfigJSON.parse(data) else { fatalError("data \(data) is not JSON") }
    if reread != value { fatalError("data \(data) reads as \(reread), the body held \(value)") }
    if data.contains(where: { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) && !hasStrings(value) {
        fatalError("data \(data) holds white space outside strings")
    }
    let again = Array(#"{"data":"#.utf8) + data + [UInt8(ascii: "}")]
    guard let republished = try? ChannelPublishBody(again, maxDataBytes: 4_096) else {
        fatalError("publishing data \(data) again is refused")
    }
    if republished.publications != [ChannelPublication(type: nil, data: data)] {
        fatalError("publishing data \(data) again gives \(republished.publications)")
    }
}

/// Whether `value` holds a string anywhere (a string's content may hold white space; nothing else in compact JSON).
private func hasStrings(_ value: ConfigJSON) -> Bool {
    switch value {
    case .string: true
    case .object(let members): !members.isEmpty  // its names are strings
    case .array(let items): items.contains(where: hasStrings)
    default: false
    }
}
