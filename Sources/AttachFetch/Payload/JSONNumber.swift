import Foundation

/// A number read from `JSONSerialization`'s output. Foundation hands JSON numbers and JSON
/// booleans over as NSNumber alike, and `value is Bool` is true for the numbers 0 and 1 too:
/// a boolean is told apart by its stored type (`c`, or a Swift Bool).
public enum JSONNumber {
    /// The number as a `Double`, or nil for a boolean, a string or anything else.
    public static func value(_ value: Any?) -> Double? {
        guard let value, type(of: value) != Bool.self, let number = value as? NSNumber,
              String(cString: number.objCType) != "c" else { return nil }
        return number.doubleValue
    }
}
