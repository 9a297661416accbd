// Helpers shared by the harnesses: the fuzz input as a regular file and as a pipe, the two
// kinds of input the readers treat differently (WAV data sizes, file sizes).
#if canImport(Glibc)
import Glibc
#endif
import RawFXMedia

/// The largest picture a harness decodes frames of: a header may claim 32768x32768 (1.6 GB),
/// which libFuzzer's malloc limit would report as a crash before any byte of data is read.
public let fuzzMaxFrameBytes = 16 << 20

/// One scratch file per process (libFuzzer runs inputs one after another), rewritten each
/// time and removed at exit.
nonisolated(unsafe) private var scratchCPath: UnsafeMutablePointer<CChar>?
private let scratchPath: String = {
    let template = strdup("/tmp/rawfx-fuzz-XXXXXX")!
    let fd = mkstemp(template)
    precondition(fd >= 0, "mkstemp failed")
    close(fd)
    scratchCPath = template
    atexit { if let path = scratchCPath { unlink(path) } }
    return String(validatingCString: template)!
}()

private func writeAll(_ fd: Int32, _ data: UnsafePointer<UInt8>, _ size: Int) {
    var done = 0
    while done < size {
        let n = write(fd, data + done, size - done)
        precondition(n > 0, "write failed")
        done += n
    }
}

/// Calls `body` with the path of a regular file holding the bytes.
public func withTemporaryFile(_ data: UnsafePointer<UInt8>, _ size: Int, _ body: (String) -> Void) {
    let fd = open(scratchPath, O_WRONLY | O_TRUNC)
    precondition(fd >= 0, "cannot open \(scratchPath)")
    writeAll(fd, data, size)
    close(fd)
    body(scratchPath)
}

/// Calls `body` with a `MediaInput` over a regular file holding the bytes.
public func withRegularFile(_ data: UnsafePointer<UInt8>, _ size: Int, _ body: (MediaInput) -> Void) {
    withTemporaryFile(data, size) { path in
        let fd = open(path, O_RDONLY)
        precondition(fd >= 0, "cannot open \(path)")
        body(MediaInput(fileDescriptor: fd, name: "fuzz", closeWhenDone: true))
    }
}

/// Calls `body` with a `MediaInput` over a pipe holding the bytes (write end closed), when
/// they fit in the pipe's buffer (64 KiB on Linux); larger inputs are skipped.
public func withPipe(_ data: UnsafePointer<UInt8>, _ size: Int, _ body: (MediaInput) -> Void) {
    guard size <= 65536 else { return }
    var fds: [Int32] = [0, 0]
    precondition(pipe(&fds) == 0, "pipe failed")
    writeAll(fds[1], data, size)
    close(fds[1])
    body(MediaInput(fileDescriptor: fds[0], name: "fuzz", closeWhenDone: true))
}

@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// Runs libFuzzer with the command line (corpus folders, -max_total_time…) on `testOneInput`.
public func runFuzzer(_ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, testOneInput))
}
