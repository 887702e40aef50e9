#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 network in CIDR notation, e.g. `203.0.113.0/24`, `2001:db8::/32`, or a
/// single address (`/32` or `/128` implied).
public struct CIDRRange: Sendable, Hashable, CustomStringConvertible {
    /// Network bytes (4 or 16) with the host bits cleared.
    package let network: [UInt8]
    let prefixLength: Int

    /// Parses `203.0.113.0/24`, `2001:db8::/32` or a single address; throws
    /// ``/AttachFetchCore/AttachFetchError`` for anything else.
    public init(_ text: String) throws(AttachFetchError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let addressText = String(parts[0])
        guard let bytes = AddressClassifier.parse(addressText) else {
            throw .invalidConfiguration("'\(text)' is not an IPv4 or IPv6 address or CIDR range")
        }
        let maximum = bytes.count * 8
        var length = maximum
        if parts.count == 2 {
            guard let value = Int(parts[1]), (0...maximum).contains(value) else {
                throw .invalidConfiguration("'\(text)' has a prefix length outside 0...\(maximum)")
            }
            length = value
        }
        network = CIDRRange.masked(bytes, length)
        prefixLength = length
    }

    /// The network in CIDR notation, host bits cleared.
    public var description: String {
        var copy = network
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        inet_ntop(network.count == 4 ? AF_INET : AF_INET6, &copy, &text, socklen_t(text.count))
        return text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } + "/\(prefixLength)"
    }

    /// Whether `address` (4 or 16 bytes) is inside. An IPv4-mapped IPv6 address (::ffff:a.b.c.d)
    /// is also matched against IPv4 ranges, so the mapped form cannot slip past a list.
    package func contains(_ address: [UInt8]) -> Bool {
        var candidate = address
        if network.count == 4, address.count == 16, address[0..<10].allSatisfy({ $0 == 0 }),
           address[10] == 0xFF, address[11] == 0xFF {
            candidate = Array(address[12..<16])
        }
        guard candidate.count == network.count else { return false }
        return CIDRRange.masked(candidate, prefixLength) == network
    }

    private static func masked(_ bytes: [UInt8], _ length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let bits = max(0, min(8, length - index * 8))
            return bits == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
        }
    }
}

/// Which destinations may be connected to. Applied by libcurl's open-socket callback to every
/// address it is about to connect to, so names, numeric tricks and redirects are all covered.
///
/// Order: a denied range refuses; else an allowed range permits; else a global address is
/// permitted, and any other (loopback, private, link-local, ...) only with
/// `allowPrivateNetwork`.
public struct AddressPolicy: Sendable, Equatable {
    /// Whether loopback, private, link-local and similar addresses may be connected to.
    public var allowPrivateNetwork: Bool
    /// Ranges always allowed, unless also denied.
    public var allowedRanges: [CIDRRange]
    /// Ranges always refused.
    public var deniedRanges: [CIDRRange]

    /// Makes a policy; the default allows only global addresses.
    public init(allowPrivateNetwork: Bool = false, allowedRanges: [CIDRRange] = [], deniedRanges: [CIDRRange] = []) {
        self.allowPrivateNetwork = allowPrivateNetwork
        self.allowedRanges = allowedRanges
        self.deniedRanges = deniedRanges
    }

    /// nil when allowed, else why not. `bytes` is the address (4 or 16 bytes), `text` its
    /// printed form.
    public func refusal(address bytes: [UInt8], text: String) -> String? {
        if let range = deniedRanges.first(where: { $0.contains(bytes) }) {
            return "\(text) is in the denied range \(range)"
        }
        if allowedRanges.contains(where: { $0.contains(bytes) }) { return nil }
        let addressClass = AddressClassifier.classify(bytes: bytes)
        if addressClass == .global || allowPrivateNetwork { return nil }
        return "\(text) is \(addressClass.phrase); private destinations are refused unless allowed"
    }

    /// Same, for a numeric address in text form; nil also for text that is not an address.
    public func refusal(for text: String) -> String? {
        guard let bytes = AddressClassifier.parse(text) else { return nil }
        return refusal(address: bytes, text: text)
    }
}
