// Serves a directory of media on a loopback port for the README's demo. Prints the base URL
// on the first line of standard output, then serves until it is killed. Usage: loopback-media-server [DIRECTORY]   (default: TestMedia)
import Foundation
import LoopbackHTTPServer

let directory = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "TestMedia"
var isDirectory: ObjCBool = false
guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
    FileHandle.standardError.write(Data("loopback-media-server: \(directory) is not a directory\n".utf8))
    exit(2)
}
let routes = MediaRoutes(directory: directory)
// No request log: the demo and the benchmarks send it hundreds of thousands of requests.
let server = try LoopbackHTTPServer(keepsRequestLog: false) { request, connection in routes.handle(request, connection) }
FileHandle.standardOutput.write(Data((server.baseURL + "\n").utf8))
// Serve until killed (the demo script stops it).
while true { sleep(3600) }
