/// A type of the descriptor whose values are a closed list of the public contract: openapi.json
/// writes them as its `enum` (`swift run openapi-document`).
package protocol ContractEnumeration {
    /// Every value, as the JSON writes it, in the contract's order.
    static var contractValues: [String] { get }
}

extension ContractEnumeration where Self: CaseIterable & RawRepresentable, RawValue == String {
    package static var contractValues: [String] { allCases.map(\.rawValue) }
}

extension AttachmentDescriptor.Status: ContractEnumeration {}
extension AttachmentDescriptor.Kind: ContractEnumeration {}
extension AttachmentDescriptor.Transform: ContractEnumeration {}
extension AttachmentDescriptor.Role: ContractEnumeration {}
extension AttachmentDescriptor.CacheStatus: ContractEnumeration {}
extension AttachmentDescriptor.Variant.Status: ContractEnumeration {}

extension ReasonCode: ContractEnumeration {
    /// The known codes (`allKnown`); a client must still expect others, which newer versions add.
    package static var contractValues: [String] { allKnown.map(\.rawValue) }
}
