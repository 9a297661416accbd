// The validator's load path (`PluginFile.walk`): an initialized plugin's entry strings, its
// filter count and descriptors, their struct_size fields, strings, parameter arrays and enum
// value lists, forged in memory from the fuzz input, then every value the later checks derive
// from a parameter (extremes, default, a `--set` value). Each struct is allocated exactly as
// large as its struct_size says (capped at the host's size), each string in a buffer of
// `maxDescriptorString + 1` bytes that may hold no NUL at all, and each array as long as its
// count (a count over `maxDescriptorCount` gets a short array: the walk must not follow it),
// so AddressSanitizer reports any read past what a plugin declared.
#if canImport(Glibc)
import Glibc
#endif
import FuzzSupport
import RawFX
@testable import RawFXValidate

/// The fuzz input as a stream of fields; zeros once it runs out.
struct FuzzReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0

    mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func u32() -> UInt32 { (0..<4).reduce(0) { value, _ in value << 8 | UInt32(byte()) } }

    mutating func double() -> Double {
        // Mostly small values a plugin would declare, sometimes any bit pattern (NaN, 1e300).
        let kind = byte()
        if kind & 3 != 0 { return Double(Int8(bitPattern: byte())) * (kind & 4 != 0 ? 0.5 : 1) }
        return Double(bitPattern: (0..<8).reduce(UInt64(0)) { value, _ in value << 8 | UInt64(byte()) })
    }

    /// A struct_size: the host's size, the 1.0 size, or anything.
    mutating func structSize(host: Int, v10: Int) -> UInt32 {
        switch byte() % 4 {
        case 0: return UInt32(host)
        case 1: return UInt32(v10)
        case 2: return UInt32(host) &+ UInt32(byte() % 64)
        default: return u32()
        }
    }
}

/// Every allocation of one input, freed after it.
final class Arena {
    var blocks: [UnsafeMutableRawPointer] = []

    func allocate(_ count: Int) -> UnsafeMutableRawPointer {
        let block = malloc(max(count, 1))!
        memset(block, 0, max(count, 1))
        blocks.append(block)
        return block
    }

    /// A string in a buffer of exactly the most the validator may read, or NULL: its bytes
    /// from the input, NUL-terminated at a position the input picks or not at all.
    func string(_ reader: inout FuzzReader) -> UnsafePointer<CChar>? {
        let kind = reader.byte()
        if kind % 5 == 0 { return nil }
        let capacity = maxDescriptorString + 1
        let buffer = allocate(capacity).assumingMemoryBound(to: UInt8.self)
        let length = Int(reader.byte()) % 24
        for i in 0..<length { buffer[i] = reader.byte() }
        if kind % 5 == 1 {
            // Unterminated: the whole buffer non-NUL (one memset: a byte loop made the harness slow).
            for i in 0..<length where buffer[i] == 0 { buffer[i] = 0x61 }
            memset(buffer + length, 0x61, capacity - length)
        } else if kind % 5 == 2 {
            // A printable id, as most plugins have.
            for i in 0..<length { buffer[i] = 0x61 + buffer[i] % 26 }
        }
        return UnsafeRawPointer(buffer).assumingMemoryBound(to: CChar.self)
    }

    /// `value` copied into a block of `structSize` bytes (at least its first field, at most
    /// `T`'s size), as a plugin built with that struct would have it.
    func structCopy<T>(_ value: T, structSize: UInt32) -> UnsafePointer<T> {
        let bytes = max(4, min(Int(structSize), MemoryLayout<T>.size))
        let block = allocate(bytes)  // exactly: reading past struct_size is out of bounds
        withUnsafeBytes(of: value) { block.copyMemory(from: $0.baseAddress!, byteCount: bytes) }
        return UnsafeRawPointer(block).assumingMemoryBound(to: T.self)
    }

    deinit { blocks.forEach { free($0) } }
}

func parameters(_ reader: inout FuzzReader, _ arena: Arena) -> (UnsafePointer<rawfx_param_descriptor>?, UInt32) {
    let shape = reader.byte()
    if shape % 8 == 0 { return (nil, reader.byte() % 3 == 0 ? 0 : reader.u32()) }
    let hugeCount = shape % 8 == 1
    let count = hugeCount ? maxDescriptorCount + 1 + reader.u32() % 1000 : UInt32(reader.byte() % 12)
    let real = hugeCount ? 2 : Int(count)
    // The stride is the first element's struct_size (the host's rule); each element's own
    // may differ.
    let hostSize = MemoryLayout<rawfx_param_descriptor>.size
    let stride = Int(reader.structSize(host: hostSize, v10: PluginStruct.paramDescriptor10) % 4096)
    let elementBytes = max(stride, 4)
    let array = arena.allocate(real * elementBytes + max(0, hostSize - elementBytes))
    for i in 0..<real {
        var p = rawfx_param_descriptor()
        p.struct_size = i == 0 ? UInt32(stride) : reader.structSize(host: hostSize, v10: PluginStruct.paramDescriptor10)
        p.id = arena.string(&reader)
        p.name = arena.string(&reader)
        p.help = arena.string(&reader)
        p.unit = arena.string(&reader)
        p.type = rawfx_param_type(reader.byte() % 7)
        p.flags = UInt32(reader.byte())
        p.default_value = reader.double()
        p.min_value = reader.double()
        p.max_value = reader.double()
        p.default_string = arena.string(&reader)
        let enumShape = reader.byte()
        if enumShape % 4 != 0 {
            let hugeEnum = enumShape % 4 == 1
            let enumCount = hugeEnum ? maxDescriptorCount + 1 + reader.u32() % 1000 : UInt32(reader.byte() % 8)
            let names = arena.allocate((hugeEnum ? 1 : Int(enumCount)) * MemoryLayout<UnsafePointer<CChar>?>.stride)
                .assumingMemoryBound(to: UnsafePointer<CChar>?.self)
            for k in 0..<(hugeEnum ? 1 : Int(enumCount)) { names[k] = arena.string(&reader) }
            p.enum_values = UnsafePointer(names)
            p.enum_count = enumCount
        } else {
            p.enum_count = reader.u32() % 3
        }
        // Element i lies at i * stride; a stride below the host's size is refused before any
        // element is read, so only the first one's struct_size must be readable then.
        let element = array + i * elementBytes
        let bytes = min(MemoryLayout<rawfx_param_descriptor>.size, i == real - 1 ? hostSize : elementBytes)
        withUnsafeBytes(of: p) { element.copyMemory(from: $0.baseAddress!, byteCount: bytes) }
    }
    return (UnsafeRawPointer(array).assumingMemoryBound(to: rawfx_param_descriptor.self), count)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ input: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let input else { return 0 }
    var reader = FuzzReader(bytes: UnsafeBufferPointer(start: input, count: size))
    let arena = Arena()
    var entry = rawfx_plugin_entry()
    entry.struct_size = UInt32(PluginStruct.entry10)
    let minor = UInt32(reader.byte() % 3)
    entry.abi = rawfx_abi_version(major: ABIVersion.host.major, minor: minor)
    entry.plugin_name = arena.string(&reader)
    entry.plugin_version = arena.string(&reader)
    let countShape = reader.byte()
    // Over the bound: never walked. Exactly the bound walks 4096 descriptors by the same code
    // as a few (a second per input): left out, so the fuzzer's time goes to the fields.
    let count: UInt32 = countShape % 16 == 15 ? maxDescriptorCount + 1 + UInt32(reader.byte()) : UInt32(countShape % 6)
    var descriptors: [UnsafePointer<rawfx_filter_descriptor>?] = []
    let hostSize = MemoryLayout<rawfx_filter_descriptor>.size
    for _ in 0..<min(Int(count), 6) {
        if reader.byte() % 9 == 0 {
            descriptors.append(nil)  // filter_descriptor(i) returns NULL
            continue
        }
        var d = rawfx_filter_descriptor()
        d.struct_size = reader.structSize(host: hostSize, v10: PluginStruct.filterDescriptor10)
        d.id = arena.string(&reader)
        d.name = arena.string(&reader)
        d.version = arena.string(&reader)
        d.description = arena.string(&reader)
        d.media_kind = rawfx_media_kind(UInt32(reader.byte() % 4))
        d.processing = rawfx_processing(UInt32(reader.byte() % 4))
        (d.params, d.param_count) = parameters(&reader, arena)
        if reader.byte() % 4 != 0 { d.create = { _, _, _ in nil } }  // never called by the walk
        descriptors.append(arena.structCopy(d, structSize: d.struct_size))
    }
    let walked = PluginFile.walk(entry: entry, abi: ABIVersion(major: ABIVersion.host.major, minor: minor), count: count) { index in
        descriptors.isEmpty ? nil : descriptors[Int(index) % descriptors.count]
    }
    // Oracle: a count over the bound is reported and not walked; under it every non-NULL
    // descriptor is described once.
    if count > maxDescriptorCount {
        precondition(walked.filters.isEmpty && walked.problems.contains { $0.hasPrefix("filter_count is \(count)") },
                     "a filter_count of \(count) was walked")
    } else {
        let present = (0..<Int(count)).filter { descriptors.isEmpty ? false : descriptors[$0 % descriptors.count] != nil }.count
        precondition(walked.filters.count == present, "\(walked.filters.count) filters described of \(present)")
    }
    for filter in walked.filters {
        // Each byte read is at most one scalar (an invalid one becomes U+FFFD).
        precondition(filter.id.unicodeScalars.count <= maxDescriptorString, "an id longer than the bound")
        for parameter in filter.parameters {
            _ = parameter.extremes.map(\.label)
            _ = parameter.defaultTrial?.label
            _ = parameter.needsValue
            for text in ["0", "-1", "1e308", "true", parameter.enumValues.first ?? "x"] {
                _ = try? parameter.parse(text, filter: filter.id)
            }
        }
        _ = filter.problems.joined()
    }
    return 0
}

runFuzzer(fuzz)
