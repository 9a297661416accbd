// The watermark plugin's PNG loader (PNGImage.swift is a link to the plugin's file).
import FuzzSupport
import RawFXPluginKit

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ input: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data = input else { return 0 }
    withTemporaryFile(data, size) { path in
        do throws(FilterFailure) { _ = try RGBAImage.load(path: path) } catch { _ = error.message }
    }
    return 0
}

runFuzzer(fuzz)
