/// Reading structs that a plugin wrote (rawfx.h, "Growth").
///
/// A plugin fills `struct_size` with `sizeof` as *it* compiled the struct, and declares the
/// ABI minor it was built against. The host copies no more than the plugin wrote and no
/// field of a minor the plugin did not declare, into a zeroed struct of the host's size, so a
/// field appended later reads as zero ("as before") for an older plugin, and an older host
/// simply never sees a newer plugin's extra fields.
public enum PluginStruct {
    /// The bytes of `T` to read: `structSize` capped by what the plugin's minor defines
    /// (`sizeForMinor`) and by the host's `sizeof(T)`.
    public static func readableSize<T>(_ type: T.Type, structSize: UInt32, sizeForMinor: Int) -> Int {
        min(Int(structSize), sizeForMinor, MemoryLayout<T>.size)
    }

    /// A zeroed `T` (`zero`) overwritten with the first `readableSize` bytes at `pointer`.
    public static func read<T>(_ pointer: UnsafePointer<T>, zero: T, structSize: UInt32, sizeForMinor: Int) -> T {
        var value = zero
        let count = readableSize(T.self, structSize: structSize, sizeForMinor: sizeForMinor)
        withUnsafeMutableBytes(of: &value) { destination in
            destination.baseAddress!.copyMemory(from: UnsafeRawPointer(pointer), byteCount: count)
        }
        return value
    }

    /// `read` with the `struct_size` the struct itself starts with (read unaligned: a plugin's
    /// pointer may be anything).
    public static func read<T>(_ pointer: UnsafePointer<T>, zero: T, sizeForMinor: Int) -> T {
        read(pointer, zero: zero, structSize: UnsafeRawPointer(pointer).loadUnaligned(as: UInt32.self), sizeForMinor: sizeForMinor)
    }

    /// The 1.0 sizes (RAWFX_SIZE_1_0_*): the least a host accepts. `rawfx_plugin_entry` has
    /// not grown since 1.0.
    public static let entry10 = MemoryLayout<rawfx_plugin_entry>.size
    public static let filterDescriptor10 = MemoryLayout<rawfx_filter_descriptor>.offset(of: \.create_with_host)!
    public static let filter10 = MemoryLayout<rawfx_filter>.offset(of: \.on_callback)!
    /// rawfx_param_descriptor has not grown since 1.0.
    public static let paramDescriptor10 = MemoryLayout<rawfx_param_descriptor>.size
    /// A parameter array's stride (its first element's struct_size) must keep every element
    /// aligned, as a C array's does: 8.
    public static let paramDescriptorAlignment = MemoryLayout<rawfx_param_descriptor>.alignment

    /// True when `value` lies within Int64 (an INT parameter's bound or default converts
    /// without a trap): -2^63 ≤ value < 2^63.
    public static func holdsInt64(_ value: Double) -> Bool {
        value >= -9_223_372_036_854_775_808.0 && value < 9_223_372_036_854_775_808.0
    }

    /// How much of a filter descriptor a plugin of ABI `minor` defines.
    public static func filterDescriptorSize(minor: UInt32) -> Int {
        minor >= 1 ? MemoryLayout<rawfx_filter_descriptor>.size : filterDescriptor10
    }

    /// How much of a filter instance a plugin of ABI `minor` defines.
    public static func filterSize(minor: UInt32) -> Int {
        minor >= 1 ? MemoryLayout<rawfx_filter>.size : filter10
    }
}
