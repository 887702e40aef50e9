internal import CLCMS2

/// An ICC profile made by LittleCMS (which libvips links for its colour management) for an RGB
/// space stated as code points: white point and primaries as CIE xy, and one gamma.
/// For spaces libvips has no built-in profile of (`StatedColour`).
enum RGBProfile {
    /// ITU-R BT.2020's primaries with the SDR transfer (H.273 lists BT.709's curve as 1, 6, 14
    /// and 15): D65 white, and the curve a display applies to it, BT.1886's gamma 2.4, as
    /// FFmpeg's `zscale` does for `transfer=709` (the camera's curve inverted would be
    /// scene light, which no screen shows).
    static let bt2020 = make(white: (0.3127, 0.3290), primaries: [(0.708, 0.292), (0.170, 0.797), (0.131, 0.046)], gamma: 2.4)

    /// The profile's bytes, or nil when LittleCMS could not make it (its message is its own;
    /// the image is then read as sRGB, as before).
    static func make(white: (Double, Double), primaries: [(Double, Double)], gamma: Double) -> [UInt8]? {
        var whitePoint = cmsCIExyY(x: white.0, y: white.1, Y: 1)
        var triple = cmsCIExyYTRIPLE(Red: cmsCIExyY(x: primaries[0].0, y: primaries[0].1, Y: 1),
                                     Green: cmsCIExyY(x: primaries[1].0, y: primaries[1].1, Y: 1),
                                     Blue: cmsCIExyY(x: primaries[2].0, y: primaries[2].1, Y: 1))
        guard let curve = cmsBuildGamma(nil, gamma) else { return nil }
        defer { cmsFreeToneCurve(curve) }
        var curves: [OpaquePointer?] = [curve, curve, curve]
        guard let profile = curves.withUnsafeMutableBufferPointer({ cmsCreateRGBProfile(&whitePoint, &triple, $0.baseAddress) }) else {
            return nil
        }
        defer { cmsCloseProfile(profile) }
        var length: UInt32 = 0
        guard cmsSaveProfileToMem(profile, nil, &length) != 0, length > 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        guard bytes.withUnsafeMutableBytes({ cmsSaveProfileToMem(profile, $0.baseAddress, &length) }) != 0 else { return nil }
        return bytes
    }
}
