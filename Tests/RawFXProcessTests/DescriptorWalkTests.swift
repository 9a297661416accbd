import Foundation
import RawFX
import RawFXRuntime
@testable import RawFXTestSupport
@testable import RawFXValidate
import XCTest

/// Descriptors FuzzPluginDescriptors found (docs/fuzzing.md): the validator's walk trapped on
/// them and the engine's loader took them. Kept here, not in RawFXEngineTests'
/// FuzzRegressionTests, because the validator is this target's.
final class DescriptorWalkTests: XCTestCase {
    /// The validator's description of one filter whose parameter array holds `parameter`
    /// `count` times at `stride` bytes (the first element's struct_size, as a host reads it).
    private func describe(_ parameter: rawfx_param_descriptor, count: Int = 1,
                          stride: Int = MemoryLayout<rawfx_param_descriptor>.size) -> FilterDescription {
        let array = UnsafeMutableRawPointer.allocate(byteCount: count * stride + MemoryLayout<rawfx_param_descriptor>.size, alignment: 16)
        defer { array.deallocate() }
        for i in 0..<count {
            var p = parameter
            p.struct_size = UInt32(stride)
            withUnsafeBytes(of: p) { (array + i * stride).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        }
        return describe(parameterArray: array, count: count)
    }

    /// The validator's description of an in-place video filter "f" over `count` parameter
    /// descriptors at `array`.
    private func describe(parameterArray array: UnsafeMutableRawPointer, count: Int) -> FilterDescription {
        "f".withCString { id in
            var d = rawfx_filter_descriptor()
            d.struct_size = UInt32(MemoryLayout<rawfx_filter_descriptor>.size)
            d.id = id
            d.media_kind = rawfx_media_kind(RAWFX_MEDIA_VIDEO)
            d.processing = rawfx_processing(RAWFX_PROCESS_IN_PLACE)
            d.params = UnsafePointer(array.assumingMemoryBound(to: rawfx_param_descriptor.self))
            d.param_count = UInt32(count)
            d.create = { _, _, _ in nil }
            return FilterDescription(index: 0, descriptor: &d, pluginMinor: ABIVersion.host.minor)
        }
    }

    private func parameter(_ type: Int32, default value: Double, min: Double = 0, max: Double = 0) -> rawfx_param_descriptor {
        func text(_ literal: StaticString) -> UnsafePointer<CChar> {
            UnsafeRawPointer(literal.utf8Start).assumingMemoryBound(to: CChar.self)
        }
        var p = rawfx_param_descriptor()
        p.id = text("v")
        p.name = text("V")
        p.help = text("Help.")
        p.type = rawfx_param_type(type)
        p.default_value = value
        p.min_value = min
        p.max_value = max
        return p
    }

    /// Found by FuzzPluginDescriptors: an INT range beyond a 64-bit integer trapped in the
    /// extremes check's conversion, and a BOOL default of NaN in the default's; a parameter
    /// array whose stride (struct_size 4095) leaves its elements misaligned trapped on the
    /// second element's struct_size. Each is now a problem of the descriptors line.
    func testValidatorReportsDescriptorsThatTrappedItsWalk() {
        let wide = describe(parameter(Int32(RAWFX_PARAM_INT), default: 0, min: -1e300, max: 1e300))
        XCTAssertTrue(wide.problems.contains("parameter 'v': an INT range [-1e+300, 1e+300] beyond a 64-bit integer"), "\(wide.problems)")
        XCTAssertEqual(wide.parameters.first?.extremes.count, 0, "no extremes to try without a range")
        XCTAssertEqual(wide.parameters.first?.defaultTrial?.label, "default (0)")

        let notANumber = describe(parameter(Int32(RAWFX_PARAM_BOOL), default: .nan))
        XCTAssertTrue(notANumber.problems.contains("parameter 'v': a BOOL default of nan, expected 0 or 1"), "\(notANumber.problems)")
        XCTAssertNil(notANumber.parameters.first?.defaultTrial, "no integer holds NaN")

        let size = MemoryLayout<rawfx_param_descriptor>.size
        let misaligned = describe(parameter(Int32(RAWFX_PARAM_INT), default: 1, max: 2), count: 2, stride: size + 4)
        XCTAssertTrue(misaligned.problems.contains("the first parameter descriptor has struct_size \(size + 4), not a multiple of 8 (a C array's stride is)"),
                      "\(misaligned.problems)")
        XCTAssertTrue(misaligned.parameters.isEmpty, "not walked")
        XCTAssertEqual(misaligned.unusable, "its parameter array cannot be walked")
    }

    /// Found by FuzzPluginDescriptors: a filter descriptor (or a parameter after the first)
    /// whose struct_size ends inside its `id` pointer was read that far, leaving half a pointer
    /// that the walk then followed (a SEGV in strnlen). Such a struct is reported and nothing
    /// past its size field is read.
    func testAStructSizeThatCutsAPointerInTwoIsNotFollowed() {
        let cut = MemoryLayout<rawfx_filter_descriptor>.offset(of: \.id)! + 4
        let text = "a-filter-id-that-must-not-be-half-read"
        let description: FilterDescription = text.withCString { id in
            var d = rawfx_filter_descriptor()
            d.struct_size = UInt32(cut)
            d.id = id
            d.media_kind = rawfx_media_kind(RAWFX_MEDIA_VIDEO)
            d.processing = rawfx_processing(RAWFX_PROCESS_IN_PLACE)
            // The plugin's memory ends at struct_size, as a plugin built with a short struct has it.
            let block = UnsafeMutableRawPointer.allocate(byteCount: cut, alignment: 16)
            defer { block.deallocate() }
            withUnsafeBytes(of: d) { block.copyMemory(from: $0.baseAddress!, byteCount: cut) }
            return FilterDescription(index: 3, descriptor: block.assumingMemoryBound(to: rawfx_filter_descriptor.self),
                                     pluginMinor: ABIVersion.host.minor)
        }
        XCTAssertEqual(description.id, "filter#3", "the id is not read from half a pointer")
        XCTAssertTrue(description.problems.contains { $0.hasPrefix("struct_size \(cut) is smaller than the 1.0 size") }, "\(description.problems)")
        XCTAssertTrue(description.problems.contains("no id"), "\(description.problems)")
        XCTAssertNotNil(description.unusable)

        let pointerCut = MemoryLayout<rawfx_param_descriptor>.offset(of: \.name)! + 4
        var short = parameter(Int32(RAWFX_PARAM_INT), default: 1, max: 2)
        let size = MemoryLayout<rawfx_param_descriptor>.size
        let array = UnsafeMutableRawPointer.allocate(byteCount: 2 * size, alignment: 16)
        defer { array.deallocate() }
        var first = short
        first.struct_size = UInt32(size)
        short.struct_size = UInt32(pointerCut)
        short.name = UnsafePointer(bitPattern: 0x0000_00AB_CDEF_0010)  // half of it read would be wild
        withUnsafeBytes(of: first) { array.copyMemory(from: $0.baseAddress!, byteCount: size) }
        withUnsafeBytes(of: short) { (array + size).copyMemory(from: $0.baseAddress!, byteCount: size) }
        let withShortParameter = describe(parameterArray: array, count: 2)
        XCTAssertTrue(withShortParameter.problems.contains("parameter 'parameter#1': struct_size \(pointerCut) is smaller than \(size)"),
                      "\(withShortParameter.problems)")
        XCTAssertTrue(withShortParameter.problems.contains("parameter 'parameter#1': name is missing or empty"),
                      "\(withShortParameter.problems)")
    }

    /// The engine's loader refuses the same descriptors (it accepted them: an INT range beyond
    /// 64 bits reached Int64 conversions later; a misaligned stride was walked).
    func testLoaderRefusesAWideIntRangeAndAMisalignedParameterStride() throws {
        let directory = temporaryDirectory()
        func load(_ name: String, _ defines: [String]) throws -> PluginLoadError? {
            let path = try compileCPlugin(fixtureSource, defines: defines, into: directory, name: name)
            do {
                try PluginRegistry.empty(environment: [:]).load(path: path)
                return nil
            } catch {
                return error
            }
        }
        guard case .malformedDescriptor(_, let wide)? = try load("wide.so", ["FIXTURE_VALUE_MIN=-1e300", "FIXTURE_VALUE_MAX=1e300"]) else {
            return XCTFail("a range beyond Int64 was accepted")
        }
        XCTAssertEqual(wide, "filter 'stamp', parameter 'value': an INT range [-1e+300, 1e+300] beyond a 64-bit integer")
        let size = MemoryLayout<rawfx_param_descriptor>.size
        guard case .malformedDescriptor(_, let stride)? = try load("stride.so", ["FIXTURE_PARAM_STRUCT_SIZE=(sizeof(rawfx_param_descriptor)+4)"]) else {
            return XCTFail("a misaligned stride was accepted")
        }
        XCTAssertEqual(stride, "filter 'stamp': the parameter descriptors' struct_size \(size + 4) is not a multiple of 8 (a C array's stride is)")
    }
}
