#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import Foundation
import RawFX
import RawFXSDK
import RawFXMedia

/// A failure of the command itself (wrong combination of arguments, truncated input…):
/// `message` is printed as `rawfx: error: <message>`.
struct CLIError: Error, CustomStringConvertible {
    var message: String
    var exitCode: Int32 = 1
    init(_ message: String, exitCode: Int32 = 1) {
        self.message = message
        self.exitCode = exitCode
    }
    var description: String { message }
}

/// Writes text to stderr, unbuffered (write(2)).
func writeStandardError(_ text: String) {
    var bytes = Array(text.utf8)
    var done = 0
    while done < bytes.count {
        let n = bytes.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress! + done, $0.count - done) }
        if n > 0 { done += n } else if n < 0 && errno == EINTR { continue } else { return }
    }
}

/// Writes one line to stderr: newlines inside collapse to spaces so it stays one line, and
/// the rest of what the message carries from outside (a plugin's error, a chain, a path) is
/// escaped (`terminalSafe`).
func printError(_ message: String) {
    let flat = message.split(whereSeparator: \.isNewline).joined(separator: " ")
    writeStandardError("rawfx: error: \(terminalSafe(flat))\n")
}

func printWarning(_ message: String) {
    let flat = message.split(whereSeparator: \.isNewline).joined(separator: " ")
    writeStandardError("rawfx: warning: \(terminalSafe(flat))\n")
}

extension RawfxCommand {
    /// Parses and runs; returns the exit status. Help and --version go to stdout (status 0);
    /// every error is one line on stderr.
    static func runReportingErrors(_ arguments: [String]) -> Int32 {
        do {
            var command = try parseAsRoot(RunCommand.spellingIsolateValues(arguments))
            try command.run()
            return 0
        } catch is ReaderClosedPipe {
            endByClosedPipe()
        } catch let error as CLIError {
            printError(error.message)
            return error.exitCode
        } catch let error as ChainError {
            printError(error.description)
            return 1
        } catch let error as MediaError {
            printError(error.description)
            return 1
        } catch let error as PluginLoadError {
            printError(error.description)
            return 1
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                // --help, help <subcommand>, --version
                print(fullMessage(for: error))
                return 0
            }
            let message = message(for: error).split(whereSeparator: \.isNewline).first.map(String.init) ?? "\(error)"
            let subcommand = arguments.first.flatMap { name in
                configuration.subcommands.first { $0._commandName == name }?._commandName
            }
            printError("\(message) (see 'rawfx \(subcommand.map { "help \($0)" } ?? "--help")')")
            return code.rawValue == 0 ? 1 : code.rawValue
        }
    }
}

/// Builds the registry for `rawfx run` and `rawfx demo`: `--plugin-path` entries, then
/// RAWFX_PLUGIN_PATH, then the executable's directory. Prints one `rawfx: warning:` line per
/// filter id that two files provide. A `--plugin-path` that does not exist ends the command
/// with `rawfx: error:` and status 1, here rather than by throwing because the commands call
/// this outside `try`.
/// The registry of `--plugin-path` entries and the standard search path; a missing
/// `--plugin-path` entry throws, naming the option. Each id clash is one warning line.
func loadRegistry(_ explicit: [String]) throws(CLIError) -> PluginRegistry {
    let registry: PluginRegistry
    do {
        registry = try PluginRegistry(searchPath: explicit)
    } catch {
        throw CLIError("--plugin-path \(error.description)")
    }
    for clash in registry.clashes { printWarning(clash.description) }
    return registry
}

/// Turns an unknown-filter error into one that also mentions plugin files that failed.
func explain(_ error: ChainError, registry: PluginRegistry) -> Error {
    if case .unknownFilter = error, !registry.failures.isEmpty {
        let n = registry.failures.count
        return CLIError("\(error.description) (\(n) plugin file\(n == 1 ? "" : "s") failed to load; see 'rawfx plugins')")
    }
    return error
}

/// A progress line on stderr, only when stderr is a terminal: frames, fps and ETA,
/// redrawn at most four times a second (so nothing is formatted for most frames).
final class ProgressLine {
    let enabled: Bool
    let total: Int?
    let unit: String
    let start = monotonicNanoseconds()
    private var lastDraw: UInt64 = 0
    private var drawn = false

    init(total: Int?, unit: String) {
        enabled = isatty(STDERR_FILENO) != 0
        self.total = total
        self.unit = unit
    }

    @inline(__always) func update(_ done: Int) {
        guard enabled else { return }
        let now = monotonicNanoseconds()
        guard now &- lastDraw > 250_000_000 else { return }
        lastDraw = now
        draw(done, now: now)
    }

    private func draw(_ done: Int, now: UInt64) {
        let seconds = Double(now - start) / 1e9
        let rate = seconds > 0 ? Double(done) / seconds : 0
        var text = "\r\(done)"
        if let total, total > 0 {
            text += "/\(total) \(unit) (\(min(100, done * 100 / total))%)"
        } else {
            text += " \(unit)"
        }
        text += String(format: "  %.1f %@/s", rate, unit as NSString)
        if let total, rate > 0, done < total {
            let eta = Int((Double(total - done) / rate).rounded())
            text += String(format: "  ETA %d:%02d", eta / 60, eta % 60)
        }
        writeStandardError(text + "\u{1B}[K")
        drawn = true
    }

    /// Draws the final figures and ends the line.
    func finish(_ done: Int) {
        guard enabled else { return }
        draw(done, now: monotonicNanoseconds())
        if drawn { writeStandardError("\n") }
    }
}

/// Milliseconds with three decimals.
func milliseconds(_ nanoseconds: UInt64) -> String { String(format: "%.3f", Double(nanoseconds) / 1e6) }

/// The reader of the output pipe went away (`… | head`): rawfx ends as Unix filters do,
/// quietly and by SIGPIPE (status 141 in a shell), once its files are closed.
struct ReaderClosedPipe: Error {}

/// `error` as it should end the command: `ReaderClosedPipe` when it is a write to a pipe
/// whose reader left.
func closedPipeOr(_ error: Error, _ output: MediaOutput?) -> Error {
    if case .writeFailed? = error as? MediaError, output?.readerClosed == true { return ReaderClosedPipe() }
    return error
}

/// Ends the process by SIGPIPE, with the default action restored (rawfx ignores it so
/// that writes fail with EPIPE instead of killing it mid-frame).
func endByClosedPipe() -> Never {
    signal(SIGPIPE, SIG_DFL)
    raise(SIGPIPE)
    exit(141)  // not reached: the signal ends the process
}

/// What a path names, to tell two spellings of one file apart (`a/../x`, a link, a `>>`
/// redirection): device and inode when it exists, else the canonical path it would get.
enum FileIdentity: Equatable {
    case inode(dev_t, ino_t)
    case path(String)

    init(path: String) {
        var st = stat()
        if stat(path, &st) == 0 {
            self = .inode(st.st_dev, st.st_ino)
            return
        }
        // Not there yet: the canonical directory plus the name.
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        let canonical = realpath(directory, nil).map { p in defer { free(p) }; return String(cString: p) } ?? directory
        self = .path(canonical + "/" + url.lastPathComponent)
    }

    /// The file open on `descriptor`, if it is a regular file (a pipe or terminal cannot
    /// be another name's file).
    init?(regularFile descriptor: Int32) {
        var st = stat()
        guard fstat(descriptor, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        self = .inode(st.st_dev, st.st_ino)
    }
}

/// Writes `path` the way `MediaOutput(replacing:)` does, for writers that take a path
/// (libpng): `body` writes a new temporary file beside it, which is renamed over `path` only
/// when `body` succeeds. `-` and an existing non-regular file (a FIFO) are written directly.
func writeReplacing(_ path: String, _ body: (String) throws -> Void) throws {
    guard let (target, mode) = try MediaOutput.replacementTarget(for: path) else {
        try body(path)
        return
    }
    let (fd, temporary) = try MediaOutput.createTemporary(beside: target, name: path, mode: mode)
    close(fd)
    defer { TemporaryFiles.remove(temporary) }
    do {
        try body(temporary)
    } catch {
        unlink(temporary)
        // Errors name the file the user gave, not the temporary one.
        if case .pngFailed(_, let message)? = error as? MediaError { throw MediaError.pngFailed(name: path, message: message) }
        throw error
    }
    guard rename(temporary, target) == 0 else {
        let reason = String(cString: strerror(errno))
        unlink(temporary)
        throw MediaError.writeFailed(name: path, reason: reason)
    }
}
