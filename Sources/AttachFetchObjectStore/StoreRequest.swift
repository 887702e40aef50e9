import Foundation

/// One HTTP request to the object store, signed by libcurl (`CURLOPT_AWS_SIGV4`) with the
/// store's credentials. Built by `ObjectStore`, carried out by the `StoreEngine`.
package struct StoreRequest: Sendable {
    package enum Method: String, Sendable { case get = "GET", head = "HEAD", put = "PUT", delete = "DELETE", post = "POST" }

    /// What is sent.
    package enum Body: Sendable {
        case none
        /// A small document held in memory.
        case bytes([UInt8])
        /// A file streamed from disk, of this size (it is not read into memory).
        case file(path: String, size: Int64)
    }

    /// Where the response body goes.
    package enum Destination: Sendable {
        /// Kept in memory, up to this many bytes (an error document, a result object).
        case memory(limit: Int)
        /// Streamed into a new file (created with O_EXCL, removed again when the call fails).
        case file(path: String)
    }

    package var method: Method
    package var url: String
    /// Header lines, `Name: value`. Every one is signed.
    package var headers: [String] = []
    package var body: Body = .none
    package var destination: Destination = .memory(limit: 64 * 1024)
    /// No part of the call runs past this.
    package var deadline: ContinuousClock.Instant
    package var connectTimeout: Duration = .seconds(3)

    package init(method: Method, url: String, headers: [String] = [], body: Body = .none,
                 destination: Destination = .memory(limit: 64 * 1024), deadline: ContinuousClock.Instant,
                 connectTimeout: Duration = .seconds(3)) {
        (self.method, self.url, self.headers, self.body) = (method, url, headers, body)
        (self.destination, self.deadline, self.connectTimeout) = (destination, deadline, connectTimeout)
    }
}

/// What the store answered.
package struct StoreResponse: Sendable {
    package var status: Int
    /// The body, for `.memory` destinations.
    package var body: [UInt8]
}

/// Why a call got no answer: no HTTP status to judge by.
package struct StoreCallFailure: Error, Sendable {
    package enum Kind: Sendable { case connection, deadline, cancelled, local }
    package var kind: Kind
    package var message: String
}
