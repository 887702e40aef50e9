/// Packed 8-bit RGB pixels.
struct RGBImage {
    package var width: Int
    package var height: Int
    package var pixels: [UInt8]

    /// Area-average downscale: each output pixel is the mean of the source area it covers,
    /// partial pixels weighted by their coverage. Separable: rows, then columns.
    ///
    /// The loops are `while` loops over buffer pointers and flat weight tables, with no tuples,
    /// iterators or generic conversions: an unoptimized (debug) build calls into the runtime for
    /// each of those: against arrays of tuples, 0.14x the CPU in a debug build and 0.76x
    /// optimized (docs/performance.md#crops). The sums are taken in the same order, so the
    /// pixels are the same.
    func areaResized(width newWidth: Int, height newHeight: Int) -> RGBImage {
        let horizontal = AreaWeights(from: width, to: newWidth)
        let vertical = AreaWeights(from: height, to: newHeight)
        let (width, height) = (self.width, self.height)
        var rows = [Float](repeating: 0, count: newWidth * height * 3)
        pixels.withUnsafeBufferPointer { source in
            rows.withUnsafeMutableBufferPointer { rows in
                horizontal.withBuffers { first, start, weights in
                    var y = 0
                    while y < height {
                        let sourceRow = y &* width &* 3
                        var at = y &* newWidth &* 3
                        var x = 0
                        while x < newWidth {
                            var r: Float = 0, g: Float = 0, b: Float = 0
                            var column = sourceRow &+ first[x] &* 3
                            var k = start[x]
                            let end = start[x &+ 1]
                            while k < end {
                                let weight = weights[k]
                                r += Float(Int(source[column])) * weight
                                g += Float(Int(source[column &+ 1])) * weight
                                b += Float(Int(source[column &+ 2])) * weight
                                column = column &+ 3
                                k = k &+ 1
                            }
                            rows[at] = r
                            rows[at &+ 1] = g
                            rows[at &+ 2] = b
                            at = at &+ 3
                            x = x &+ 1
                        }
                        y = y &+ 1
                    }
                }
            }
        }
        let stride = newWidth * 3
        var out = [UInt8](repeating: 0, count: stride * newHeight)
        var sums = [Float](repeating: 0, count: stride)
        rows.withUnsafeBufferPointer { rows in
            out.withUnsafeMutableBufferPointer { out in
                sums.withUnsafeMutableBufferPointer { sums in
                    vertical.withBuffers { first, start, weights in
                        var y = 0
                        while y < newHeight {
                            var i = 0
                            while i < stride { sums[i] = 0; i = i &+ 1 }
                            var row = first[y]
                            var k = start[y]
                            let end = start[y &+ 1]
                            while k < end {
                                let weight = weights[k], base = row &* stride
                                i = 0
                                while i < stride { sums[i] += rows[base &+ i] * weight; i = i &+ 1 }
                                row = row &+ 1
                                k = k &+ 1
                            }
                            let at = y &* stride
                            i = 0
                            while i < stride {
                                let sum = sums[i].rounded()
                                out[at &+ i] = sum <= 0 ? 0 : sum >= 255 ? 255 : UInt8(Int(sum))
                                i = i &+ 1
                            }
                            y = y &+ 1
                        }
                    }
                }
            }
        }
        return RGBImage(width: newWidth, height: newHeight, pixels: out)
    }

    package func cropped(to region: (left: Int, top: Int, width: Int, height: Int)) -> RGBImage {
        guard region != (0, 0, width, height) else { return self }
        var out = [UInt8]()
        out.reserveCapacity(region.width * region.height * 3)
        for y in region.top..<(region.top + region.height) {
            let start = (y * width + region.left) * 3
            out.append(contentsOf: pixels[start..<(start + region.width * 3)])
        }
        return RGBImage(width: region.width, height: region.height, pixels: out)
    }
}

/// For each output index of an area-average resize, the run of source indices it covers and
/// their weights (summing to 1), in flat tables: output `i` covers source indices from
/// `first[i]`, weighted by `weights[start[i]..<start[i + 1]]`.
private struct AreaWeights {
    var first: [Int] = []
    var start: [Int] = [0]
    var weights: [Float] = []

    init(from source: Int, to target: Int) {
        let ratio = Double(source) / Double(target)
        first.reserveCapacity(target)
        start.reserveCapacity(target + 1)
        for index in 0..<target {
            let from = Double(index) * ratio, to = min(Double(source), from + ratio)
            var position = Int(from)
            var covering: Int?
            while Double(position) < to, position < source {
                let covered = min(to, Double(position + 1)) - max(from, Double(position))
                if covered > 0 {
                    covering = covering ?? position
                    weights.append(Float(covered / ratio))
                }
                position += 1
            }
            first.append(covering ?? 0)
            start.append(weights.count)
        }
    }

    func withBuffers<R>(_ body: (UnsafeBufferPointer<Int>, UnsafeBufferPointer<Int>, UnsafeBufferPointer<Float>) -> R) -> R {
        first.withUnsafeBufferPointer { first in
            start.withUnsafeBufferPointer { start in
                weights.withUnsafeBufferPointer { weights in body(first, start, weights) }
            }
        }
    }
}
