import ArgumentParser
import RawFX
import RawFXSDK

struct RawfxCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rawfx",
        abstract: "Frame effects for raw video (I420) and audio (16-bit PCM), with filters from plugins.",
        discussion: """
        Filters live in plugin files (.so) found in --plugin-path directories or files, then in \
        $RAWFX_PLUGIN_PATH (colon-separated), then next to the rawfx executable; when two files \
        provide the same filter id, the earlier one keeps it. Only plugin files that nobody but \
        root and you can change are loaded (file and directories owned by root or you, not \
        writable by group or others); RAWFX_ALLOW_UNTRUSTED_PLUGINS=1 lifts that. \
        'rawfx plugins' lists the filters with every parameter, and the files it refused and why.

        A chain is FFmpeg's -vf syntax: filters separated by ',', each 'name=key=value:key=value' \
        (or values in declared order, 'scale=1280:720'). Quote a value holding ':' or ',' with '…'.

        Examples:
          rawfx plugins                                   list filters and parameters
          rawfx demo --output-dir /tmp/rawfx-demo         the whole pipeline on generated input
          rawfx run --vf scale=width=1280:height=720 in.y4m out.y4m
          rawfx run --af denoise=level=-30 noisy.wav clean.wav
          rawfx compose a.y4m b.y4m c.y4m d.y4m -o gallery.y4m    four inputs in a 2x2 gallery
          ffmpeg -i in.mp4 -f yuv4mpegpipe - | rawfx run --vf rotate=angle=90 - - | ffmpeg -f yuv4mpegpipe -i - out.mp4
        """,
        version: RawFXHost.version,
        subcommands: [PluginsCommand.self, RunCommand.self, ComposeCommand.self, DemoCommand.self, ValidateCommand.self])
}
