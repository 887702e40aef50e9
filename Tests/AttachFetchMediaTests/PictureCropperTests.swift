import Testing
@testable import AttachFetchMedia

/// Where the crops go, without a picture: the 2:1 size, a cut centred on a point and kept
/// inside, and the window the attention cues choose.
@Suite struct PictureCropperTests {
    @Test(arguments: [
        (1600, 1600, 1024, 1024, 512), (500, 1000, 1024, 500, 250), (3000, 1000, 1024, 1024, 512),
        (301, 900, 1024, 300, 150), (3, 1, 1024, 2, 1),
    ])
    func theTwoToOneSizeIsEvenNeverEnlargedAndAtMostTheMaximum(width: Int, height: Int, maxWidth: Int, expectedWidth: Int, expectedHeight: Int) {
        let size = PictureCropper.twoToOneSize(width: width, height: height, maxWidth: maxWidth)
        #expect(size.width == expectedWidth && size.height == expectedHeight, "\(size)")
        #expect(size.width <= width && size.height <= height)
    }

    @Test func aCutCentresOnItsPointAndStaysInside() {
        #expect(PictureCropper.edge(centredOn: 0.5, part: 100, whole: 300) == 100)
        #expect(PictureCropper.edge(centredOn: 0, part: 100, whole: 300) == 0)
        #expect(PictureCropper.edge(centredOn: 1, part: 100, whole: 300) == 200)
        #expect(PictureCropper.edge(centredOn: 0.9, part: 100, whole: 300) == 200)
        #expect(PictureCropper.edge(centredOn: 0.5, part: 300, whole: 300) == 0)
    }

    /// A grey picture with a patch of detail at one end: the window holds the patch; a flat one
    /// keeps the middle.
    @Test func theAttentionWindowHoldsTheDetailAndAFlatPictureKeepsTheMiddle() throws {
        let (width, height) = (160, 80)
        var pixels = [UInt8](repeating: 128, count: width * height * 3)
        for y in 0..<height {
            for x in 130..<150 {
                let value: UInt8 = (x + y) % 2 == 0 ? 20 : 235
                for band in 0..<3 { pixels[(y * width + x) * 3 + band] = band == 0 ? value : 255 - value }
            }
        }
        let cues = try #require(pixels.withUnsafeBufferPointer { AttentionCues(pixels: $0, width: width, height: height, bands: 3) })
        let start = cues.bestWindow(side: 80, length: width)
        #expect(start <= 130 && start + 80 >= 150, "the window from \(start) misses the detail at 130-150")
        let flat = [UInt8](repeating: 128, count: width * height * 3)
        let even = try #require(flat.withUnsafeBufferPointer { AttentionCues(pixels: $0, width: width, height: height, bands: 3) })
        #expect(even.bestWindow(side: 80, length: width) == 40)
    }
}
