// Runs `EncryptedAttachmentFetcher` once in a process of its own and reports what it got and
// how much the process's peak memory grew, for AttachFetchDeviceTests: the test process's
// memory is shared with every test running beside it.
//
// device-fetch-check DIRECTORY DEADLINE_SECONDS WARM_UP_USERINFO_JSON USERINFO_JSON
//
// The warm-up payload is fetched first, so that what every download costs once (the session's
// threads and buffers) is not counted; then the peak is reset and the payload fetched. One
// JSON object on standard output: results, elapsedMs, growthBytes.
//
// device-fetch-check --decode FILE KEY
//
// Decrypts FILE with `ContentDecoder` alone, fed 64 KiB at a time, without a network or a
// session buffering ahead: the decoder's own peak. Prints bytes, sha256, growthBytes.
import AttachFetchDevice
import EncryptedContent
import Foundation
import ResidentMemory

func userInfo(_ text: String) -> [AnyHashable: Any] {
    guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
        FileHandle.standardError.write(Data("device-fetch-check: not a JSON object: \(text)\n".utf8))
        exit(2)
    }
    return object
}

func printJSON(_ object: [String: Any]) throws {
    print(String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self))
}

let arguments = CommandLine.arguments
if arguments.count == 4, arguments[1] == "--decode" {
    guard let key = ContentKey(base64URL: arguments[3]), let input = FileHandle(forReadingAtPath: arguments[2]) else {
        FileHandle.standardError.write(Data("device-fetch-check: cannot read \(arguments[2]) or the key\n".utf8))
        exit(2)
    }
    var decoder = ContentDecoder(key: key)
    var hasher = SHA256Hasher()
    var bytes = 0
    let before = try ResidentMemory.resetPeak()
    while true {
        let chunk = input.readData(ofLength: 64 * 1024)
        if chunk.isEmpty { break }
        try decoder.feed(chunk) { hasher.update($0); bytes += $0.count }
    }
    try decoder.finish { hasher.update($0); bytes += $0.count }
    try printJSON(["bytes": bytes, "sha256": hasher.hex, "growthBytes": (try ResidentMemory.peak()) - before])
    exit(0)
}
guard arguments.count == 5, let seconds = Double(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: device-fetch-check DIRECTORY DEADLINE_SECONDS WARM_UP_JSON USERINFO_JSON\n".utf8))
    exit(2)
}
let fetcher = EncryptedAttachmentFetcher(directory: URL(fileURLWithPath: arguments[1]))
let warmUp = try await fetcher.fetch(userInfo: userInfo(arguments[3]), deadline: Date().addingTimeInterval(30))
for case .success(let fetched) in warmUp { try? FileManager.default.removeItem(at: fetched.fileURL) }
let before = try ResidentMemory.resetPeak()
let start = Date()
let results = try await fetcher.fetch(userInfo: userInfo(arguments[4]), deadline: start.addingTimeInterval(seconds))
let elapsed = Date().timeIntervalSince(start)
let growth = (try ResidentMemory.peak()) - before
let report: [String: Any] = [
    "warmUp": warmUp.map { (try? $0.get()) != nil },
    "results": results.map { result -> [String: Any] in
        switch result {
        case .success(let fetched):
            try? FileManager.default.removeItem(at: fetched.fileURL)
            return ["ok": true, "bytes": fetched.bytes]
        case .failure(let error):
            return ["ok": false, "code": error.code.rawValue, "message": error.message]
        }
    },
    "elapsedMs": Int(elapsed * 1000),
    "growthBytes": growth,
]
try printJSON(report)
