// The descriptor's own compact writer (see `CompactJSONWritable` for why): every field of the
// `Codable` types, keys in sorted (byte) order. A field added to a type must be added here too:
// `ContractListTests` names any key path written by `JSONEncoder` and not here (or the reverse),
// and `JSONWriterTests` fails on any byte that differs.

extension AttachmentDescriptor: CompactJSONWritable {
    package func write(to json: inout CompactJSON) {
        json.object { json in
            json.field("ats", ats)
            json.field("audioCodec", audioCodec)
            json.field("bytes", bytes)
            json.field("cache", cache)
            json.field("declaredMimeType", declaredMimeType)
            json.field("duration", duration)
            json.field("encryption", encryption)
            json.field("file", file)
            json.field("fileExtension", fileExtension)
            json.field("finalUrl", finalUrl)
            json.field("height", height)
            json.field("identifier", identifier)
            json.field("kind", kind)
            json.field("mimeType", mimeType)
            json.field("options", options)
            json.field("payloadPath", payloadPath)
            json.field("publishedBytes", publishedBytes)
            json.field("publishedUrl", publishedUrl)
            json.field("reason", reason)
            json.field("role", role)
            json.field("sha256", sha256)
            if let skippedAtDeadline {
                json.key("skippedAtDeadline")
                json.array(skippedAtDeadline) { $0.string($1) }
            }
            json.field("sourceAudioCodec", sourceAudioCodec)
            json.field("sourceBytes", sourceBytes)
            json.field("sourceDamage", sourceDamage)
            json.field("sourceHeight", sourceHeight)
            json.field("sourceMimeType", sourceMimeType)
            json.field("sourceVideoCodec", sourceVideoCodec)
            json.field("sourceWidth", sourceWidth)
            json.field("statedDuration", statedDuration)
            json.field("status", status)
            json.field("thumbnail", thumbnail)
            json.field("thumbnailClip", thumbnailClip)
            json.field("timings", timings)
            Self.write(transforms, as: "transforms", to: &json)
            json.field("url", url)
            json.field("uti", uti)
            if let variants {
                json.key("variants")
                json.object { json in
                    for platform in variants.keys.sorted(by: CompactJSON.keyOrder) { json.field(platform, variants[platform]) }
                }
            }
            json.field("videoCodec", videoCodec)
            json.field("width", width)
        }
    }

    fileprivate static func write(_ transforms: [Transform]?, as name: String, to json: inout CompactJSON) {
        guard let transforms else { return }
        json.key(name)
        json.array(transforms) { $0.string($1.rawValue) }
    }
}

extension AttachmentDescriptor.Reason: CompactJSONWritable {
    package func write(to json: inout CompactJSON) {
        json.object { json in
            json.field("code", code)
            json.field("message", message)
        }
    }
}

extension AttachmentDescriptor.Thumbnail: CompactJSONWritable {
    package func write(to json: inout CompactJSON) {
        json.object { json in
            // Empty for a batch that kept no files; left out, as `encode(to:)` leaves it.
            json.field("encryption", encryption)
            json.field("file", file.isEmpty ? nil : file)
            json.field("height", height)
            json.field("publishedBytes", publishedBytes)
            json.field("publishedUrl", publishedUrl)
            json.field("time", time)
            json.field("width", width)
        }
    }
}

extension AttachmentDescriptor.Encryption: CompactJSONWritable {
    package func write(to json: inout CompactJSON) {
        json.object { json in
            json.field("key", key)
            json.field("recordSize", recordSize)
            json.field("scheme", scheme)
        }
    }
}

extension AttachmentDescriptor.Timings: CompactJSONWritable {
    package func write(to json: inout CompactJSON) {
        json.object { json in
            json.field("connect", connect)
            json.field("download", download)
            json.field("firstByte", firstByte)
            json.field("normalize", normalize)
            json.field("probe", probe)
            json.field("queued", queued)
            json.field("thumbnail", thumbnail)
            json.field("total", total)
            json.field("variants", variants)
        }
    }
}

extension AttachmentDescriptor.Variant: CompactJSONWritable {
    package func write(to json: inout CompactJSON) {
        json.object { json in
            json.field("bytes", bytes)
            json.field("encryption", encryption)
            json.field("file", file)
            json.field("height", height)
            json.field("mimeType", mimeType)
            json.field("publishedBytes", publishedBytes)
            json.field("publishedUrl", publishedUrl)
            json.field("reason", reason)
            json.field("sha256", sha256)
            json.field("status", status)
            AttachmentDescriptor.write(transforms, as: "transforms", to: &json)
            json.field("width", width)
        }
    }
}

extension ATSVerdict: CompactJSONWritable {
    package func write(to json: inout CompactJSON) {
        json.object { json in
            json.field("compliant", compliant)
            json.key("problems")
            json.array(problems) { json, problem in
                json.object { json in
                    json.field("code", problem.code)
                    json.field("message", problem.message)
                }
            }
        }
    }
}

extension AttachmentOptions: CompactJSONWritable {
    package func write(to json: inout CompactJSON) {
        json.object { json in
            if let clippingRect {
                json.key(CodingKeys.clippingRect.rawValue)
                json.object { json in
                    json.field("Height", clippingRect.height)
                    json.field("Width", clippingRect.width)
                    json.field("X", clippingRect.x)
                    json.field("Y", clippingRect.y)
                }
            }
            json.field(CodingKeys.thumbnailHidden.rawValue, thumbnailHidden)
            json.field(CodingKeys.thumbnailTime.rawValue, thumbnailTime)
        }
    }
}

extension ClippingRectangle: CompactJSONWritable {
    package func write(to json: inout CompactJSON) {
        json.object { json in
            json.field("height", height)
            json.field("width", width)
            json.field("x", x)
            json.field("y", y)
        }
    }
}
