import Testing
@testable import AttachFetchTransfer

/// The classifier is tested directly: nothing here connects anywhere.
@Suite struct AddressClassifierTests {
    @Test(arguments: [
        ("127.0.0.1", AddressClass.loopback), ("127.255.255.254", .loopback),
        ("10.0.0.1", .privateNetwork), ("172.16.0.1", .privateNetwork), ("172.31.255.255", .privateNetwork),
        ("192.168.1.1", .privateNetwork), ("100.64.0.1", .sharedAddressSpace), ("100.100.100.200", .sharedAddressSpace),
        ("169.254.169.254", .linkLocal), ("224.0.0.1", .multicast), ("0.0.0.0", .unspecified),
        ("255.255.255.255", .broadcast), ("240.0.0.1", .reserved), ("192.0.2.10", .reserved),
        ("8.8.8.8", .global), ("172.32.0.1", .global), ("100.128.0.1", .global), ("1.1.1.1", .global),
        ("::1", .loopback), ("::", .unspecified), ("fe80::1", .linkLocal), ("fc00::1", .uniqueLocal),
        ("fd00:ec2::254", .uniqueLocal), ("ff02::1", .multicast), ("::ffff:127.0.0.1", .loopback),
        ("::ffff:10.1.2.3", .privateNetwork), ("::ffff:169.254.169.254", .linkLocal), ("::127.0.0.1", .loopback),
        ("64:ff9b::a9fe:a9fe", .linkLocal), ("2002:7f00:1::", .loopback), ("2001:db8::1", .reserved),
        ("2606:4700:4700::1111", .global), ("::ffff:8.8.8.8", .global),
        // IPv4-translated (RFC 2765) and local-use NAT64 (RFC 8215) embed an IPv4 address too.
        ("::ffff:0:7f00:1", .loopback), ("::ffff:0:a9fe:a9fe", .linkLocal), ("::ffff:0:808:808", .global),
        ("64:ff9b:1::7f00:1", .loopback), ("64:ff9b:1::a00:1", .privateNetwork),
    ])
    func classifiesAddress(text: String, expected: AddressClass) {
        #expect(AddressClassifier.classify(text) == expected, "\(text)")
    }

    @Test func nonNumericTextIsNotClassified() {
        #expect(AddressClassifier.classify("example.com") == nil)
        #expect(AddressClassifier.classify("") == nil)
    }
}
