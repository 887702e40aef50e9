import Testing
@testable import AttachFetchCore

/// A C call's output buffer read as text: up to the first NUL, never past the buffer.
@Suite struct CStringBufferTests {
    @Test func theTextEndsAtTheFirstNUL() {
        let buffer: [CChar] = [0x68, 0x6F, 0x73, 0x74, 0, 0x78, 0x79, 0]
        #expect(String(nulTerminated: buffer) == "host")
    }

    @Test func aBufferWithoutANULIsReadWholeAndNoFurther() {
        let buffer: [CChar] = [0x61, 0x62, 0x63]
        #expect(String(nulTerminated: buffer) == "abc")
    }

    @Test func bytesThatAreNotUTF8AreReplaced() {
        let buffer: [CChar] = [0x61, CChar(bitPattern: 0xFF), 0x62, 0]
        #expect(String(nulTerminated: buffer) == "a\u{FFFD}b")
    }
}
