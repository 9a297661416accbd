// rawfx: list plugins, run filter chains over Y4M/WAV files and pipes, and the demo.
//
// Every failure ends as ONE line on stderr, `rawfx: error: …`, and a non-zero exit status:
// errors are caught here. SIGPIPE is ignored so that a write fails with EPIPE: the output is
// closed in order, then rawfx ends quietly by SIGPIPE, as Unix filters do (`… | head`).
// SIGXFSZ is ignored so that a file-size limit (`ulimit -f`) is a write error (EFBIG) after
// which the output keeps its whole frames, rather than a kill that leaves nothing.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import Logging
import RawFX
import RawFXMedia

// The engine's and plugins' lines reach swift-log (RawFXLog); this backend prints them
// as `rawfx: <source>: <message>`.
LoggingSystem.bootstrap(StandardErrorLogHandler.init)
signal(SIGPIPE, SIG_IGN)
signal(SIGXFSZ, SIG_IGN)
// Killed (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT): outputs being written are removed, their targets untouched.
TemporaryFiles.removeOnTerminatingSignals()
exit(RawfxCommand.runReportingErrors(CommandLine.arguments.dropFirst().map { $0 }))
