// Y4M reader: header and FRAME lines, frame payloads, timestamps; as a file and as a pipe.
import FuzzSupport
import RawFXMedia

func readAll(_ input: MediaInput) {
    do {
        let reader = try Y4MReader(input)
        _ = reader.estimatedFrameCount
        _ = reader.header.line
        guard reader.header.frameByteCount <= fuzzMaxFrameBytes else { return }
        var frames = 0
        while frames < 64, let frame = try reader.readFrame() {
            _ = frame.timestampMicroseconds
            frames += 1
        }
    } catch {
        _ = error.description  // the messages' escaping runs on every refusal
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ input: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data = input else { return 0 }
    withRegularFile(data, size, readAll)
    withPipe(data, size, readAll)
    // The header parser on its own, with any bytes (invalid UTF-8 included) and its messages.
    let text = String(decoding: UnsafeBufferPointer(start: data, count: min(size, 4096)), as: UTF8.self)
    do { _ = try Y4MHeader.parse(text) } catch { _ = error.description }
    return 0
}

runFuzzer(fuzz)
