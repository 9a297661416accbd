#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which plugin files the loader trusts: regular files that nobody but root and the current
/// user can change, judged as ld.so judges libraries for set-uid programs and as OpenSSH's
/// `StrictModes` judges `authorized_keys`.
///
/// The file and every directory above it must be owned by root or the effective user and
/// must not be writable by group or others. A directory writable by others is accepted when
/// it is sticky (`/tmp`): others may add entries there but cannot rename or replace ours,
/// which the ownership rule already requires to be root's or the user's.
/// `RAWFX_ALLOW_UNTRUSTED_PLUGINS=1` turns the check off.
public enum PluginTrust {
    /// The environment variable that loads plugins the trust rule refuses (value `1`).
    public static let overrideVariable = "RAWFX_ALLOW_UNTRUSTED_PLUGINS"

    /// True when `environment` sets the override to `1`.
    public static func isOverridden(in environment: [String: String]) -> Bool {
        environment[overrideVariable] == "1"
    }

    /// The first rule that `file` (an absolute path without symbolic links, as `realpath`
    /// gives) or one of the directories above it breaks, or nil when it may be loaded.
    /// `fileStatus` is the `fstat` of the opened file; directories are judged with `lstat`.
    static func violation(file: String, fileStatus: stat, user: uid_t = geteuid()) -> TrustViolation? {
        if let broken = brokenRule(fileStatus, isDirectory: false, user: user) {
            return TrustViolation(path: file, isDirectory: false, ownerUID: fileStatus.st_uid,
                                  mode: UInt32(fileStatus.st_mode), rule: broken, user: user)
        }
        var directory = parentDirectory(of: file)
        while true {
            var status = stat()
            guard lstat(directory, &status) == 0 else {
                return TrustViolation(path: directory, isDirectory: true, ownerUID: 0, mode: 0,
                                      rule: .unreadable(errno: errno), user: user)
            }
            if let broken = brokenRule(status, isDirectory: true, user: user) {
                return TrustViolation(path: directory, isDirectory: true, ownerUID: status.st_uid,
                                      mode: UInt32(status.st_mode), rule: broken, user: user)
            }
            if directory == "/" { return nil }
            directory = parentDirectory(of: directory)
        }
    }

    private static func brokenRule(_ status: stat, isDirectory: Bool, user: uid_t) -> TrustViolation.Rule? {
        let mode = status.st_mode
        if isDirectory && (mode & S_IFMT) != S_IFDIR { return .notADirectory }
        if status.st_uid != 0 && status.st_uid != user { return .ownedByAnotherUser }
        let sticky = isDirectory && mode & S_ISVTX != 0
        if mode & S_IWOTH != 0 && !sticky { return .writableByOthers }
        if mode & S_IWGRP != 0 && !sticky { return .writableByGroup }
        return nil
    }

    /// "/a/b" of "/a/b/c.so"; "/" of "/c.so".
    private static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }
}

/// The rule a plugin file or one of its directories breaks (`PluginLoadError.untrusted`).
public struct TrustViolation: Equatable, Sendable, CustomStringConvertible {
    public enum Rule: Equatable, Sendable {
        /// Owned by a user other than root and the current one.
        case ownedByAnotherUser
        /// Writable by its group (a directory: and not sticky).
        case writableByGroup
        /// Writable by others (a directory: and not sticky).
        case writableByOthers
        /// Something above the file that is not a directory (it changed while being judged).
        case notADirectory
        /// A directory above the file that `lstat` cannot read.
        case unreadable(errno: Int32)
    }

    /// The file or directory that breaks the rule.
    public var path: String
    public var isDirectory: Bool
    public var ownerUID: UInt32
    /// `st_mode`; `description` shows its permission bits in octal.
    public var mode: UInt32
    public var rule: Rule
    /// The effective user the rule was judged for.
    public var user: UInt32

    public init(path: String, isDirectory: Bool, ownerUID: UInt32, mode: UInt32, rule: Rule, user: UInt32) {
        self.path = path
        self.isDirectory = isDirectory
        self.ownerUID = ownerUID
        self.mode = mode
        self.rule = rule
        self.user = user
    }

    /// The permission bits, sticky/set-id included, in octal: "0775", "1777".
    public var octalMode: String {
        let digits = String(mode & 0o7777, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    public var description: String {
        let what = "\(isDirectory ? "directory" : "file") \(path)"
        let facts = "owner uid \(ownerUID), mode \(octalMode)"
        switch rule {
        case .ownedByAnotherUser:
            return "\(what) is owned by uid \(ownerUID), not by root or uid \(user) (mode \(octalMode))"
        case .writableByGroup:
            return "\(what) is writable by its group (\(facts))"
        case .writableByOthers:
            return "\(what) is writable by others (\(facts))"
        case .notADirectory:
            return "\(path) is not a directory (\(facts))"
        case .unreadable(let code):
            return "\(what) cannot be examined: \(String(cString: strerror(code)))"
        }
    }
}

/// A plugin file that passed the checks that come before `dlopen`: it exists, is a regular
/// file, and is trusted (or the override is set).
struct PluginFile {
    /// `realpath` of the path given: absolute, no symbolic links, no `.` or `..`.
    let canonicalPath: String
    let identity: FileIdentity

    /// Resolves `path` (a bare name is relative to the current directory, never a library
    /// search), refuses anything but a regular file before opening it, then opens it
    /// `O_RDONLY | O_NOFOLLOW | O_NONBLOCK` (a FIFO swapped in cannot block) and judges what
    /// `fstat` of the descriptor says, not a second lookup of the name. `dlopen` then opens
    /// the same canonical path: only root or the owner can replace it in between, since the
    /// trust rule leaves no directory on it writable by anyone else. (`dlopen` of
    /// `/proc/self/fd/N` would close even that window, but makes `$ORIGIN` mean
    /// `/proc/self/fd`, breaking plugins that find their own libraries beside them.)
    static func check(_ path: String, allowUntrusted: Bool) throws(PluginLoadError) -> PluginFile {
        guard let resolved = realpath(path, nil) else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw .notFound(path: path) }
            throw .cannotOpen(path: path, reason: String(cString: strerror(code)))
        }
        let canonical = String(cString: resolved)
        free(resolved)
        var linkStatus = stat()
        guard lstat(canonical, &linkStatus) == 0 else { throw .notFound(path: path) }
        guard isRegularFile(linkStatus) else { throw .notRegularFile(path: path, kind: kind(of: linkStatus)) }
        let descriptor = open(canonical, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw .cannotOpen(path: path, reason: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .cannotOpen(path: path, reason: String(cString: strerror(errno))) }
        guard isRegularFile(status), status.st_dev == linkStatus.st_dev, status.st_ino == linkStatus.st_ino else {
            throw .notRegularFile(path: path, kind: "\(kind(of: status)), swapped in while it was being opened")
        }
        if !allowUntrusted, let violation = PluginTrust.violation(file: canonical, fileStatus: status) {
            throw .untrusted(path: path, violation: violation)
        }
        return PluginFile(canonicalPath: canonical,
                          identity: FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino)))
    }

    private static func isRegularFile(_ status: stat) -> Bool { status.st_mode & S_IFMT == S_IFREG }

    private static func kind(of status: stat) -> String {
        switch status.st_mode & S_IFMT {
        case S_IFREG: return "a regular file"
        case S_IFDIR: return "a directory"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFLNK: return "a symbolic link"
        default: return "file type \(String(status.st_mode & S_IFMT, radix: 8))"
        }
    }
}

/// A file's identity (`st_dev`, `st_ino`): the same file however its path is spelled.
struct FileIdentity: Hashable {
    var device: UInt64
    var inode: UInt64
}
