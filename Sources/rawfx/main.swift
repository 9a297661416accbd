// rawfx: list plugins, run filter chains over Y4M/WAV files and pipes, and the demo.
//
// Every failure ends as ONE line on stderr, `rawfx: error: …`, and a non-zero exit status:
// errors are caught here, SIGPIPE is ignored (a closed pipe is reported as an error line).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser

signal(SIGPIPE, SIG_IGN)
exit(RawfxCommand.runReportingErrors(CommandLine.arguments.dropFirst().map { $0 }))
