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
/// pipe”) — provided the process ignores SIGPIPE, as `rawfx` does.
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
        try? flush()
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
    /// `close` (a full disk on NFS shows up there).
    public func close() throws(MediaError) {
        try flush()
        if closeWhenDone {
            closeWhenDone = false
            if posixClose(fileDescriptor) != 0 { throw failure() }
        }
    }

    private func writeAll(_ bytes: UnsafeRawPointer, _ count: Int) throws(MediaError) {
        var done = 0
        while done < count {
            let n = posixWrite(fileDescriptor, bytes + done, count - done)
            if n > 0 { done += n; continue }
            if n < 0 && errno == EINTR { continue }
            throw failure()
        }
    }

    private func failure() -> MediaError {
        let code = errno
        if code == EPIPE { return .writeFailed(name: name, reason: "broken pipe (the reading side closed it)") }
        return .writeFailed(name: name, reason: String(cString: strerror(code)))
    }
}
