// The chain syntax (FilterSpec.parseChain) and value parsing (ParameterDescriptor.parse)
// against a fixed set of descriptors, one per parameter type.
@testable import RawFX
import FuzzSupport

func descriptor(_ id: String, _ type: ParameterType, range: ClosedRange<Double>? = nil) -> ParameterDescriptor {
    ParameterDescriptor(id: id, name: id, help: "", unit: "", type: type, defaultValue: nil, range: range,
                        isPath: false, isRequired: false, needsReconfigure: false)
}

let descriptors = [
    descriptor("width", .int, range: 2...16384),
    descriptor("any", .int),
    descriptor("opacity", .float, range: 0...1),
    descriptor("level", .float),
    descriptor("on", .bool),
    descriptor("corner", .enumeration(["top-left", "top-right", "bottom-left", "bottom-right"])),
    descriptor("image", .string),
]

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ input: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data = input else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    // Every descriptor parses the whole input as one value.
    for d in descriptors {
        do { _ = try d.parse(text, filter: "fuzz") } catch { _ = error.description }
    }
    do {
        let specs = try FilterSpec.parseChain(text)
        // The printed form parses back to the same specs.
        let again = try FilterSpec.parseChain(FilterSpec.chainText(specs))
        precondition(again == specs, "chainText does not round-trip: \(specs) -> \(again)")
        for spec in specs {
            for (i, argument) in spec.arguments.enumerated() {
                let d = argument.key.flatMap { k in descriptors.first { $0.id == k } } ?? descriptors[i % descriptors.count]
                do { _ = try d.parse(argument.value, filter: spec.name) } catch { _ = error.description }
            }
        }
    } catch {
        _ = error.description
    }
    return 0
}

runFuzzer(fuzz)
