#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

// The POSIX calls under names that methods called read/write/close do not shadow.
@inline(__always) func posixRead(_ fd: Int32, _ p: UnsafeMutableRawPointer, _ n: Int) -> Int { read(fd, p, n) }
@inline(__always) func posixWrite(_ fd: Int32, _ p: UnsafeRawPointer, _ n: Int) -> Int { write(fd, p, n) }
@inline(__always) func posixClose(_ fd: Int32) -> Int32 { close(fd) }

/// A buffered reader over a file descriptor: a regular file, a pipe or a terminal.
///
/// `MediaInput(path: "-")` reads standard input. Reads go through a 256 KiB buffer (allocated
/// once), so parsing headers byte by byte costs no system calls and frames cost few.
public final class MediaInput {
    /// The path, or `stdin`: what error messages call the input.
    public let name: String
    public let fileDescriptor: Int32
    private let closeWhenDone: Bool
    private var handle: FileHandle?
    private let capacity = 1 << 18
    private let buffer: UnsafeMutablePointer<UInt8>
    private var start = 0
    private var end = 0
    private var sawEOF = false
    /// Bytes consumed so far (the offset of the next byte `read` returns).
    public private(set) var offset: Int64 = 0

    /// Opens a file for reading; `-` is standard input.
    public convenience init(path: String) throws(MediaError) {
        if path == "-" {
            self.init(fileDescriptor: STDIN_FILENO, name: "stdin", closeWhenDone: false)
            return
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .cannotOpen(name: path, reason: String(cString: strerror(errno))) }
        var st = stat()
        if fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR {
            _ = posixClose(fd)
            throw .cannotOpen(name: path, reason: "it is a directory")
        }
        self.init(fileDescriptor: fd, name: path, closeWhenDone: true)
    }

    /// Reads an open descriptor; `closeWhenDone` closes it in `deinit`.
    public init(fileDescriptor: Int32, name: String, closeWhenDone: Bool = false) {
        self.fileDescriptor = fileDescriptor
        self.name = name
        self.closeWhenDone = closeWhenDone
        buffer = .allocate(capacity: capacity)
    }

    /// Reads a `FileHandle`'s descriptor; the handle is kept alive (and keeps ownership).
    public convenience init(fileHandle: FileHandle, name: String) {
        self.init(fileDescriptor: fileHandle.fileDescriptor, name: name, closeWhenDone: false)
        handle = fileHandle
    }

    deinit {
        buffer.deallocate()
        if closeWhenDone { _ = posixClose(fileDescriptor) }
    }

    /// The size in bytes of a regular file; nil for pipes and terminals.
    public var fileSize: Int64? {
        var st = stat()
        guard fstat(fileDescriptor, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(st.st_size)
    }

    /// Refills the buffer; false at end of input.
    private func fill() throws(MediaError) -> Bool {
        if start == end { start = 0; end = 0 }
        if sawEOF { return false }
        if end == capacity {  // compact
            memmove(buffer, buffer + start, end - start)
            end -= start
            start = 0
        }
        while true {
            let n = posixRead(fileDescriptor, buffer + end, capacity - end)
            if n > 0 { end += n; return true }
            if n == 0 { sawEOF = true; return false }
            if errno == EINTR { continue }
            throw .readFailed(name: name, reason: String(cString: strerror(errno)))
        }
    }

    /// Reads up to `count` bytes, fewer only at the end of the input. Returns the count read.
    public func read(into destination: UnsafeMutableRawPointer, count: Int) throws(MediaError) -> Int {
        var done = 0
        while done < count {
            if start == end {
                // A large read with an empty buffer goes straight to the destination.
                if count - done >= capacity && !sawEOF {
                    let n = posixRead(fileDescriptor, destination + done, count - done)
                    if n > 0 { done += n; offset += Int64(n); continue }
                    if n == 0 { sawEOF = true; break }
                    if errno == EINTR { continue }
                    throw .readFailed(name: name, reason: String(cString: strerror(errno)))
                }
                guard try fill() else { break }
            }
            let take = min(count - done, end - start)
            memcpy(destination + done, buffer + start, take)
            start += take
            done += take
            offset += Int64(take)
        }
        return done
    }

    /// The next byte, or nil at the end of the input.
    public func readByte() throws(MediaError) -> UInt8? {
        if start == end { guard try fill() else { return nil } }
        let b = buffer[start]
        start += 1
        offset += 1
        return b
    }

    /// Up to `count` (≤ 4096) upcoming bytes without consuming them, fewer only at the end
    /// of the input: to sniff a stream's format.
    public func peek(_ count: Int) throws(MediaError) -> [UInt8] {
        precondition(count <= 4096)
        while end - start < count {
            if start > 0 { memmove(buffer, buffer + start, end - start); end -= start; start = 0 }
            guard try fill() else { break }
        }
        return Array(UnsafeBufferPointer(start: buffer + start, count: min(count, end - start)))
    }

    /// Discards `count` bytes; returns how many were there.
    public func skip(_ count: Int64) throws(MediaError) -> Int64 {
        var left = count
        while left > 0 {
            if start == end { guard try fill() else { break } }
            let take = Int(min(left, Int64(end - start)))
            start += take
            offset += Int64(take)
            left -= Int64(take)
        }
        return count - left
    }
}

/// A writer to a file descriptor: a regular file, a pipe or a terminal, with a 64 KiB buffer.
///
/// `MediaOutput(path: "-")` writes standard output. Writes larger than the buffer go straight
/// to the descriptor. A reader that closed the pipe is a `MediaError.writeFailed` (“broken
/// pipe”, and `readerClosed` is true) — provided the process ignores SIGPIPE, as `rawfx` does.
///
/// `MediaOutput(replacing:)` never touches an existing file until the new one is complete:
/// it writes a temporary file beside the target and `close()` renames it over the target.
public final class MediaOutput {
    /// The path, or `stdout`.
    public let name: String
    public let fileDescriptor: Int32
    private var closeWhenDone: Bool
    private var handle: FileHandle?
    private let capacity = 1 << 16
    private let buffer: UnsafeMutablePointer<UInt8>
    private var used = 0
    /// Bytes written so far (buffered ones included).
    public private(set) var offset: Int64 = 0
    /// Bytes the descriptor accepted (`offset` minus what is buffered or failed).
    public private(set) var writtenBytes: Int64 = 0
    /// True once a write failed because the reading end of a pipe (or FIFO) was closed.
    public private(set) var readerClosed = false
    /// For `init(replacing:)`: the temporary file written, and the target it replaces at `close()`.
    public private(set) var temporaryPath: String?
    private var target: String?
    /// The first failed write since the output was last consistent (see `truncate(to:)`).
    private var lostWrite: MediaError?

    /// Creates or truncates a file (mode 0644); `-` is standard output.
    public convenience init(path: String) throws(MediaError) {
        if path == "-" {
            self.init(fileDescriptor: STDOUT_FILENO, name: "stdout", closeWhenDone: false)
            return
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .cannotOpen(name: path, reason: String(cString: strerror(errno))) }
        self.init(fileDescriptor: fd, name: path, closeWhenDone: true)
    }

    /// Writes `path` without ever exposing a partial file: the bytes go to a new file beside it
    /// (`.<name>.rawfx-XXXXXX` in the same directory, created with `O_EXCL`), which `close()`
    /// renames over `path`; `discard()` (or dropping the object unclosed) removes it, leaving
    /// an existing `path` byte for byte. A symbolic link is followed (its target is replaced).
    /// `-` is standard output, and an existing non-regular file (a FIFO, `/dev/null`, a
    /// terminal) is written in place, as a stream: renaming over those would replace them.
    public convenience init(replacing path: String) throws(MediaError) {
        guard let (target, mode) = try MediaOutput.replacementTarget(for: path) else {
            if path == "-" {
                self.init(fileDescriptor: STDOUT_FILENO, name: "stdout", closeWhenDone: false)
                return
            }
            // O_NONBLOCK would fail a FIFO with no reader yet (ENXIO); a blocking open waits
            // for one, as a shell redirection does.
            let fd = open(path, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { throw .cannotOpen(name: path, reason: String(cString: strerror(errno))) }
            self.init(fileDescriptor: fd, name: path, closeWhenDone: true)
            return
        }
        let (fd, temporary) = try MediaOutput.createTemporary(beside: target, name: path, mode: mode)
        self.init(fileDescriptor: fd, name: path, closeWhenDone: true)
        temporaryPath = temporary
        self.target = target
    }

    /// How `init(replacing:)` writes `path`: nil when in place (`-`, or an existing FIFO,
    /// device or terminal: renaming over those would replace them); otherwise the file to
    /// rename over (a symbolic link followed) and the permission bits to keep (nil for a new file).
    public static func replacementTarget(for path: String) throws(MediaError) -> (path: String, mode: mode_t?)? {
        if path == "-" { return nil }
        var st = stat()
        guard stat(path, &st) == 0 else { return (path, nil) }
        switch st.st_mode & S_IFMT {
        case S_IFREG:
            // Renaming would get round a file's own write protection: refuse as `open` would.
            guard access(path, W_OK) == 0 else { throw .cannotOpen(name: path, reason: String(cString: strerror(errno))) }
            let resolved = realpath(path, nil).map { p in defer { free(p) }; return String(cString: p) } ?? path
            return (resolved, st.st_mode & 0o7777)
        case S_IFDIR: throw .cannotOpen(name: path, reason: "it is a directory")
        default: return nil
        }
    }

    /// Creates `.<base>.rawfx-XXXXXX` beside `path` with `O_EXCL`, mode `mode` (default 0644
    /// less the umask). `name` is what errors call the target.
    public static func createTemporary(beside path: String, name: String, mode: mode_t? = nil) throws(MediaError) -> (Int32, String) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let base = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        for _ in 0..<100 {
            var suffix = ""
            for _ in 0..<6 { suffix.append(Character(Unicode.Scalar(letters.randomElement()!))) }
            let candidate = directory + "." + base + ".rawfx-" + suffix
            let fd = open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            if fd >= 0 {
                if let mode { _ = fchmod(fd, mode) }
                TemporaryFiles.add(candidate)
                return (fd, candidate)
            }
            if errno != EEXIST { throw .cannotOpen(name: name, reason: String(cString: strerror(errno))) }
        }
        throw .cannotOpen(name: name, reason: "no free temporary name beside it")
    }

    public init(fileDescriptor: Int32, name: String, closeWhenDone: Bool = false) {
        self.fileDescriptor = fileDescriptor
        self.name = name
        self.closeWhenDone = closeWhenDone
        buffer = .allocate(capacity: capacity)
        var st = stat()
        let regular = fstat(fileDescriptor, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
        let appending = fcntl(fileDescriptor, F_GETFL) & O_APPEND != 0
        let position = lseek(fileDescriptor, 0, SEEK_CUR)
        isSeekable = regular && !appending && position >= 0
        startPosition = Int64(max(position, 0))
    }

    /// Writes to a `FileHandle`'s descriptor; the handle is kept alive (and keeps ownership).
    public convenience init(fileHandle: FileHandle, name: String) {
        self.init(fileDescriptor: fileHandle.fileDescriptor, name: name, closeWhenDone: false)
        handle = fileHandle
    }

    deinit {
        if temporaryPath != nil {
            discard()  // never closed: an error ended the writing, so the target stays as it was
        } else {
            try? flush()
        }
        buffer.deallocate()
        if closeWhenDone { _ = posixClose(fileDescriptor) }
    }

    /// True for a regular file not opened for appending, where `write(at:)` can patch
    /// earlier bytes (so `rawfx … - > out.wav` gets exact WAV sizes too).
    public let isSeekable: Bool
    /// Where the descriptor was when this object took it: `write(at:)` positions count from here.
    private let startPosition: Int64

    public func write(_ bytes: UnsafeRawPointer, count: Int) throws(MediaError) {
        if used + count <= capacity {
            memcpy(buffer + used, bytes, count)
            used += count
        } else {
            try flush()
            if count < capacity {
                memcpy(buffer, bytes, count)
                used = count
            } else {
                try writeAll(bytes, count)
            }
        }
        offset += Int64(count)
    }

    public func write(_ bytes: [UInt8]) throws(MediaError) {
        var failure: MediaError?
        bytes.withUnsafeBytes { raw in
            do { try write(raw.baseAddress!, count: raw.count) } catch { failure = error as? MediaError }
        }
        if let failure { throw failure }
    }

    public func write(_ text: String) throws(MediaError) {
        try write(Array(text.utf8))
    }

    /// Overwrites bytes at `position` (counted from where this output started) of a
    /// seekable output, after flushing the buffer.
    public func write(at position: Int64, _ bytes: [UInt8]) throws(MediaError) {
        try flush()
        let n = bytes.withUnsafeBytes { pwrite(fileDescriptor, $0.baseAddress!, $0.count, off_t(startPosition + position)) }
        guard n == bytes.count else { throw failure() }
    }

    /// Writes out the buffer.
    public func flush() throws(MediaError) {
        guard used > 0 else { return }
        let n = used
        used = 0
        try writeAll(buffer, n)
    }

    /// Flushes and closes the descriptor (if this object opened it). Reports a failed
    /// `close` (a full disk on NFS shows up there). For `init(replacing:)`, the data is
    /// synced and the temporary file renamed over the target; on failure it is removed.
    public func close() throws(MediaError) {
        guard let temporary = temporaryPath, let target else {
            try flush()
            if closeWhenDone {
                closeWhenDone = false
                if posixClose(fileDescriptor) != 0 { throw failure() }
            }
            return
        }
        // A write that failed left a hole: never rename such a file over the target. The file
        // stays open (for `truncate(to:)` to cut it back to whole frames), or goes at deinit.
        if let lostWrite { throw lostWrite }
        try flush()
        // Without fsync a crash soon after the rename can leave an empty file in place of the old one.
        if fsync(fileDescriptor) != 0 { throw failure() }
        do throws(MediaError) {
            closeWhenDone = false
            if posixClose(fileDescriptor) != 0 { throw failure() }
            if rename(temporary, target) != 0 { throw failure() }
            TemporaryFiles.remove(temporary)
            temporaryPath = nil
        } catch {
            discard()
            throw error
        }
    }

    /// For `init(replacing:)`: closes and removes the temporary file, leaving the target as it
    /// was. Does nothing for other outputs.
    public func discard() {
        guard let temporary = temporaryPath else { return }
        temporaryPath = nil
        used = 0
        if closeWhenDone {
            closeWhenDone = false
            _ = posixClose(fileDescriptor)
        }
        _ = unlink(temporary)
        TemporaryFiles.remove(temporary)
    }

    /// Cuts a seekable output back to its first `count` bytes (from where it started), after
    /// dropping anything buffered: to end a failed output on its last whole frame.
    public func truncate(to count: Int64) throws(MediaError) {
        used = 0
        guard isSeekable, ftruncate(fileDescriptor, off_t(startPosition + count)) == 0 else { throw failure() }
        offset = count
        writtenBytes = count
        lostWrite = nil
    }

    private func writeAll(_ bytes: UnsafeRawPointer, _ count: Int) throws(MediaError) {
        var done = 0
        while done < count {
            let n = posixWrite(fileDescriptor, bytes + done, count - done)
            if n > 0 { done += n; writtenBytes += Int64(n); continue }
            if n < 0 && errno == EINTR { continue }
            let error = failure()
            if lostWrite == nil { lostWrite = error }
            throw error
        }
    }

    private func failure() -> MediaError {
        let code = errno
        if code == EPIPE {
            readerClosed = true
            return .writeFailed(name: name, reason: "broken pipe (the reading side closed it)")
        }
        return .writeFailed(name: name, reason: String(cString: strerror(code)))
    }
}

/// The temporary files being written (`MediaOutput.createTemporary`), kept as C strings in a
/// fixed table a signal handler can read without allocating: a process killed by SIGINT,
/// SIGTERM or SIGHUP removes them, so its targets stay as they were and nothing is left beside.
public enum TemporaryFiles {
    private static let capacity = 32
    nonisolated(unsafe) private static let table: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> = {
        let t = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: capacity)
        t.initialize(repeating: nil, count: capacity)
        return t
    }()

    static func add(_ path: String) {
        for i in 0..<capacity where table[i] == nil {
            table[i] = strdup(path)
            return
        }
    }

    /// Takes `path` out of the table (renamed into place, or already removed) as `rename` and
    /// `unlink` name it (a path string equal to the one added).
    public static func remove(_ path: String) {
        for i in 0..<capacity {
            if let p = table[i], String(cString: p) == path {
                table[i] = nil
                free(p)
            }
        }
    }

    /// Installs handlers for SIGINT, SIGTERM, SIGHUP and SIGQUIT (Ctrl-\\) that remove the files
    /// in the table, then end the process by the same signal (its status says it was killed;
    /// SIGQUIT still dumps core where cores are enabled).
    public static func removeOnTerminatingSignals() {
        _ = table  // initialized here, never in the handler
        for sig in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] {
            // A signal ignored by whoever started rawfx (nohup, a background job) stays ignored.
            let previous = signal(sig, SIG_IGN)
            if let previous, unsafeBitCast(previous, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self) { continue }
            signal(sig) { sig in
                // Only async-signal-safe calls: unlink, signal, raise.
                var i = 0
                while i < TemporaryFiles.capacity {
                    if let p = TemporaryFiles.table[i] { unlink(p) }
                    i += 1
                }
                signal(sig, SIG_DFL)
                raise(sig)
            }
        }
    }
}
