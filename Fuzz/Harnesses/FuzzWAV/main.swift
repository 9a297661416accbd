// WAV reader: RIFF chunks, fmt, data sizes (strict on files, read to the end on pipes).
import FuzzSupport
import RawFXMedia

nonisolated(unsafe) let samples = UnsafeMutablePointer<Int16>.allocate(capacity: 4096 * 64)

func readAll(_ input: MediaInput) {
    do {
        let reader = try WAVReader(input)
        _ = reader.frameCount
        while try reader.read(into: samples, maxFrames: 4096 / reader.format.channels) > 0 {}
    } catch {
        _ = error.description
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ input: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data = input else { return 0 }
    withRegularFile(data, size, readAll)
    withPipe(data, size, readAll)
    return 0
}

runFuzzer(fuzz)
