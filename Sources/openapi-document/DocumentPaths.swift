import AttachFetchService

/// openapi.json's `paths`, written from the service's `Routes` table: one member per route, in
/// the table's order, with exactly its methods. The inspector's files are written whole from
/// `InspectorPage.files`; every other route's operations are kept as the document has them
/// (their prose is written there, once), and a route the document lacks or documents with other
/// methods is an error to mend by hand, named by the tool.
func writePaths(into document: inout OrderedJSON) throws {
    guard let paths = document["paths"], case .object(let documented) = paths else {
        throw DocumentError("openapi.json: no top-level \"paths\" object")
    }
    let inspector = Dictionary(uniqueKeysWithValues: InspectorPage.files.map { ("/" + $0.path, $0) })
    document["paths"] = .object(try Routes.all.map { route -> OrderedJSON.Member in
        if let file = inspector[route.pattern] { return .init(key: route.pattern, value: inspectorOperations(file)) }
        guard let member = documented.first(where: { $0.key == route.pattern }) else {
            throw DocumentError("openapi.json documents no \(route.pattern): write its operations under \"paths\"")
        }
        let methods = Set(route.methods.map { $0.rawValue.lowercased() }), written = Set(member.value.members.map(\.key))
        guard written == methods else {
            throw DocumentError("openapi.json documents \(route.pattern) with \(written.sorted()), the Routes table says \(methods.sorted())")
        }
        return member
    })
}

/// A file of the inspector: GET with its media type, and HEAD.
private func inspectorOperations(_ file: InspectorPage.File) -> OrderedJSON {
    func object(_ members: KeyValuePairs<String, OrderedJSON>) -> OrderedJSON { .object(members.map { .init(key: $0.key, value: $0.value) }) }
    return object([
        "get": object([
            "operationId": .string(file.operationID),
            "summary": .string("The inspector (docs/inspector.md)"),
            "responses": object(["200": object([
                "description": .string("The file."),
                "content": .object([.init(key: file.mediaType, value: object(["schema": object(["type": .string("string")])]))]),
            ])]),
        ]),
        "head": object([
            "operationId": .string(file.operationID + "Head"),
            "responses": object(["200": object(["description": .string("The file's headers.")])]),
        ]),
    ])
}
