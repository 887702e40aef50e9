import AttachFetchService

/// openapi.json's `paths`, written from the service's `Routes` table: one member per route, in
/// the table's order, with exactly its methods. The inspector's files are written whole from
/// `InspectorPage.files`; every other route's operations are kept as the document has them
/// (their prose is written there, once), and a route the document lacks or documents with other
/// methods is an error to mend by hand, named by the tool.
func renderPaths(_ text: String) throws -> String {
    guard let open = text.range(of: "\n  \"paths\": {\n"),
          let close = text.range(of: #"\n  \}(,?)\n"#, options: .regularExpression, range: open.upperBound..<text.endIndex) else {
        throw PathsError("openapi.json: no top-level \"paths\" object")
    }
    let documented = try pathMembers(String(text[open.upperBound..<close.lowerBound]))
    let inspector = Dictionary(uniqueKeysWithValues: InspectorPage.files.map { ("/" + $0.path, $0) })
    let members = try Routes.all.map { route -> String in
        if let file = inspector[route.pattern] { return inspectorMember(file) }
        guard let member = documented[route.pattern] else {
            throw PathsError("openapi.json documents no \(route.pattern): write its operations under \"paths\"")
        }
        let methods = Set(route.methods.map { $0.rawValue.lowercased() })
        guard member.methods == methods else {
            throw PathsError("openapi.json documents \(route.pattern) with \(member.methods.sorted()), the Routes table says \(methods.sorted())")
        }
        return member.text
    }
    return String(text[..<open.upperBound]) + members.joined(separator: ",\n") + String(text[close.lowerBound...])
}

/// The members of the `paths` object (its text between the braces), by pattern: each one's
/// text and the methods it documents.
private func pathMembers(_ body: String) throws -> [String: (text: String, methods: Set<String>)] {
    var members: [String: (text: String, methods: Set<String>)] = [:]
    var current: (pattern: String, lines: [String], methods: Set<String>)?
    for line in body.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
        if current == nil {
            guard line.hasPrefix("    \""), line.hasSuffix("\": {") else {
                throw PathsError("openapi.json: a line in \"paths\" outside any path: \(line)")
            }
            current = (String(line.dropFirst(5).dropLast(4)), [line], [])
            continue
        }
        current?.lines.append(line)
        if line.hasPrefix("      \""), line.hasSuffix("\": {"), !line.hasPrefix("       ") {
            current?.methods.insert(String(line.dropFirst(7).dropLast(4)))
        }
        if line == "    }" || line == "    }," {
            var lines = current!.lines
            lines[lines.count - 1] = "    }"
            members[current!.pattern] = (lines.joined(separator: "\n"), current!.methods)
            current = nil
        }
    }
    return members
}

/// A file of the inspector: GET with its media type, and HEAD.
private func inspectorMember(_ file: InspectorPage.File) -> String {
    """
        "/\(file.path)": {
          "get": {
            "operationId": "\(file.operationID)",
            "summary": "The inspector (docs/inspector.md)",
            "responses": {
              "200": {
                "description": "The file.",
                "content": {
                  "\(file.mediaType)": {
                    "schema": {
                      "type": "string"
                    }
                  }
                }
              }
            }
          },
          "head": {
            "operationId": "\(file.operationID)Head",
            "responses": {
              "200": {
                "description": "The file's headers."
              }
            }
          }
        }
    """
}
