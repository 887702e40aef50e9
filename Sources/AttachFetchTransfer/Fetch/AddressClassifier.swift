#if canImport(Glibc)
import Glibc
#endif

/// What kind of destination an IP address is. Everything but `global` is refused unless the
/// configuration allows private networks.
public enum AddressClass: String, Sendable, CaseIterable {
    /// Publicly routable.
    case global
    /// 127.0.0.0/8, ::1.
    case loopback
    /// RFC 1918: 10/8, 172.16/12, 192.168/16.
    case privateNetwork
    /// Carrier-grade NAT, 100.64.0.0/10.
    case sharedAddressSpace
    /// 169.254.0.0/16, fe80::/10.
    case linkLocal
    /// IPv6 unique-local, fc00::/7.
    case uniqueLocal
    /// 224.0.0.0/4, ff00::/8.
    case multicast
    /// 0.0.0.0/8, ::.
    case unspecified
    /// 255.255.255.255.
    case broadcast
    /// Documentation, benchmarking and other reserved ranges.
    case reserved

    /// A phrase for reason messages.
    var phrase: String {
        switch self {
        case .global: return "a global address"
        case .loopback: return "a loopback address"
        case .privateNetwork: return "a private-network address"
        case .sharedAddressSpace: return "a carrier-grade NAT address"
        case .linkLocal: return "a link-local address"
        case .uniqueLocal: return "a unique-local address"
        case .multicast: return "a multicast address"
        case .unspecified: return "an unspecified address"
        case .broadcast: return "the broadcast address"
        case .reserved: return "a reserved or documentation address"
        }
    }
}

/// Classifies IP addresses by the IANA special-purpose registries. Pure functions: tests for
/// ranges other than loopback call these directly, never by connecting.
public enum AddressClassifier {
    /// `address` in host byte order.
    public static func classify(ipv4 address: UInt32) -> AddressClass {
        func inRange(_ base: UInt32, _ prefix: UInt32) -> Bool {
            let mask: UInt32 = prefix == 0 ? 0 : ~UInt32(0) << (32 - prefix)
            return address & mask == base & mask
        }
        if address == 0xFFFF_FFFF { return .broadcast }
        if inRange(0x0000_0000, 8) { return .unspecified }            // 0.0.0.0/8 "this network"
        if inRange(0x7F00_0000, 8) { return .loopback }               // 127/8
        if inRange(0x0A00_0000, 8) || inRange(0xAC10_0000, 12) || inRange(0xC0A8_0000, 16) {
            return .privateNetwork                                     // RFC 1918
        }
        if inRange(0x6440_0000, 10) { return .sharedAddressSpace }    // 100.64/10 (CGNAT; Alibaba metadata 100.100.100.200)
        if inRange(0xA9FE_0000, 16) { return .linkLocal }             // 169.254/16 (cloud metadata 169.254.169.254)
        if inRange(0xE000_0000, 4) { return .multicast }              // 224/4
        if inRange(0xF000_0000, 4) { return .reserved }               // 240/4
        if inRange(0xC000_0000, 24) || inRange(0xC000_0200, 24) || inRange(0xC633_6400, 24)
            || inRange(0xCB00_7100, 24) || inRange(0xC612_0000, 15) || inRange(0xC058_6300, 24) {
            return .reserved                                           // IETF, TEST-NETs, benchmarking, 6to4 relay
        }
        return .global
    }

    /// `bytes` is the 16-byte address in network order.
    public static func classify(ipv6 bytes: [UInt8]) -> AddressClass {
        precondition(bytes.count == 16, "an IPv6 address has 16 bytes")
        let embeddedIPv4 = ipv4(bytes[12..<16])
        let first10Zero = bytes[0..<10].allSatisfy { $0 == 0 }
        if bytes.allSatisfy({ $0 == 0 }) { return .unspecified }
        if first10Zero && bytes[10] == 0 && bytes[11] == 0 && bytes[12..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 {
            return .loopback                                           // ::1
        }
        if first10Zero && bytes[10] == 0xFF && bytes[11] == 0xFF { return classify(ipv4: embeddedIPv4) } // ::ffff:a.b.c.d
        if bytes[0..<12].allSatisfy({ $0 == 0 }) { return classify(ipv4: embeddedIPv4) }                  // ::a.b.c.d (deprecated)
        if bytes[0..<8].allSatisfy({ $0 == 0 }) && bytes[8..<12] == [0xFF, 0xFF, 0, 0] {                  // ::ffff:0:a.b.c.d (IPv4-translated, RFC 2765)
            return classify(ipv4: embeddedIPv4)
        }
        if bytes[0..<6] == [0x00, 0x64, 0xFF, 0x9B, 0x00, 0x01] {                                         // 64:ff9b:1::/48 local NAT64 (RFC 8215)
            return classify(ipv4: embeddedIPv4)
        }
        if bytes[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] {                            // 64:ff9b::/96 NAT64
            return classify(ipv4: embeddedIPv4)
        }
        if bytes[0] == 0xFF { return .multicast }                      // ff00::/8
        if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return .linkLocal }   // fe80::/10
        if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0xC0 { return .uniqueLocal } // fec0::/10 (old site-local)
        if bytes[0] & 0xFE == 0xFC { return .uniqueLocal }             // fc00::/7 (AWS metadata fd00:ec2::254)
        if bytes[0] == 0x20 && bytes[1] == 0x01 && bytes[2] == 0x0D && bytes[3] == 0xB8 { return .reserved } // 2001:db8::/32
        if bytes[0] == 0x20 && bytes[1] == 0x02 {                      // 6to4: 2002:a.b.c.d::/48 embeds IPv4
            return classify(ipv4: ipv4(bytes[2..<6]))
        }
        return .global
    }

    /// Classifies an address given as its 4 (IPv4) or 16 (IPv6) bytes in network order.
    public static func classify(bytes: [UInt8]) -> AddressClass {
        bytes.count == 4 ? classify(ipv4: ipv4(bytes[...])) : classify(ipv6: bytes)
    }

    /// Classifies a numeric address in text form (dotted IPv4 or IPv6); nil when not numeric.
    public static func classify(_ text: String) -> AddressClass? {
        parse(text).map { classify(bytes: $0) }
    }

    /// The bytes of a numeric IPv4 (4) or IPv6 (16) address, network order; nil otherwise.
    static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// Four bytes in network order as a host-order IPv4 address.
    private static func ipv4(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// The address bytes (4 or 16) and printed form of a socket address as libcurl hands it to
    /// the open-socket callback; nil for families other than IPv4 and IPv6.
    package static func address(sockaddr pointer: UnsafeRawPointer, family: Int32) -> (bytes: [UInt8], text: String)? {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch family {
        case AF_INET:
            var raw = pointer.loadUnaligned(as: sockaddr_in.self).sin_addr
            inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
            return (withUnsafeBytes(of: &raw) { Array($0) }, text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        case AF_INET6:
            var raw = pointer.loadUnaligned(as: sockaddr_in6.self).sin6_addr
            inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
            return (withUnsafeBytes(of: &raw) { Array($0) }, text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        default:
            return nil
        }
    }
}
