import Foundation

/// One HTTP request to the object store, signed by libcurl (`CURLOPT_AWS_SIGV4`) with the
/// store's credentials. Built by `ObjectStore`, carried out by the `StoreEngine`.
struct StoreRequest: Sendable {
    enum Method: String, Sendable { case get = "GET", head = "HEAD", put = "PUT", delete = "DELETE", post = "POST" }

    /// What is sent.
    enum Body: Sendable {
        case none
        /// A small document held in memory.
        case bytes([UInt8])
        /// A file streamed from disk, of this size (it is not read into memory).
        case file(path: String, size: Int64)
    }

    /// Where the response body goes.
    enum Destination: Sendable {
        /// Kept in memory, up to this many bytes (an error document, a result object).
        case memory(limit: Int)
        /// Streamed into a new file (created with O_EXCL, removed again when the call fails).
        case file(path: String)
    }

    var method: Method
    var url: String
    /// Header lines, `Name: value`. Every one is signed.
    var headers: [String] = []
    var body: Body = .none
    var destination: Destination = .memory(limit: 64 * 1024)
    /// No part of the call runs past this.
    var deadline: ContinuousClock.Instant
    var connectTimeout: Duration = .seconds(3)
}

/// What the store answered.
struct StoreResponse: Sendable {
    var status: Int
    /// The body, for `.memory` destinations.
    var body: [UInt8]
}

/// Why a call got no answer: no HTTP status to judge by.
struct StoreCallFailure: Error, Sendable {
    enum Kind: Sendable { case connection, deadline, cancelled, local }
    var kind: Kind
    var message: String
}
