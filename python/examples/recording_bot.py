"""A recording bot's program from Python (docs/production.md): every participant's video into
a rawfx.Compositor input, the gallery composed on a steady clock and written as Y4M to a file or
to stdout for FFmpeg; every participant's one-way audio (32000 Hz) into a rawfx.Mixer input
with its own gain, resampled to 48000 Hz, written as WAV on the same clock: frame N leaves with
the 10 ms blocks rawfx.Mixer.blocks_for_frame(N) names.

    python3 recording_bot.py --frames 300 - program.wav | ffmpeg -f yuv4mpegpipe -i - program.mp4

In a bot the pictures come from onRawDataFrameReceived (submit each as it comes, from the SDK's
thread) and the audio from onVirtualSpeakerOneWayAudioReceived. Here 9 users are emulated:
coloured pictures with a moving box, user 2 turning video off (onRawDataStatusChanged(off): the
placeholder), user 9 leaving (the layout re-flows), user 1 sharing (the share layout from the
next frame), the active speaker changing every 2 s.
"""
import argparse
import json
import sys
import wave

import numpy as np

import rawfx

WIDTH, HEIGHT, FPS, RATE, USERS = 1280, 720, 30, 48000, 9
STREAM_RATE = 32000  # the virtual speaker's one-way streams


def user_picture(user, n, width=640, height=360):
    y = np.full((height, width), 60 + 12 * user, np.uint8)
    u = np.full((height // 2, width // 2), 90 + 17 * user % 80, np.uint8)
    v = np.full((height // 2, width // 2), 170 - 13 * user % 80, np.uint8)
    bx, by = (n * 4 + user * 30) % (width - 40), (n * 2 + user * 20) % (height - 40)
    y[by:by + 40, bx:bx + 40] = 235
    return y, u, v


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=150)
    parser.add_argument("video", help="Y4M output, or - for stdout")
    parser.add_argument("audio", nargs="?", help="WAV output (mono 16-bit, 48000 Hz)")
    args = parser.parse_args(argv)

    comp = rawfx.Compositor(WIDTH, HEIGHT, fps=FPS, layout="grid", background=0x202428, placeholder=0x3C4650,
                            timeout=0.5, border=2)
    registry = rawfx.Registry()  # finds `resample` (SpeexDSP) and `text` (the Text plugin)

    # Names and captions: the `text` filter as overlays. Each tile gets a label and, while its
    # video is off, a card with its number; the program gets a caption bar whose text changes
    # ten times a second (set_parameter, any time; the compositor keeps the chains).
    def text(style, content):
        chain = registry.video_chain("text=" + style)
        chain.set_parameter("text.text", content)
        return chain

    inputs = {str(u): comp.add_input(str(u), overlay=text("anchor=bottom_left:size=20:box=true:margin=6", "User %d" % u),
                                     placeholder_overlay=text("anchor=center:size=64", str(u)))
              for u in range(1, USERS + 1)}
    captions = text("anchor=bottom:size=32:box=true:max_width=0.8", "")
    comp.set_overlay(captions)
    mixer = rawfx.Mixer(RATE, registry=registry)
    voices = {str(u): mixer.add_input(str(u)) for u in range(1, USERS + 1)}
    out = sys.stdout.buffer if args.video == "-" else open(args.video, "wb")
    wav = None
    if args.audio:
        wav = wave.open(args.audio, "wb")
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(RATE)
    out.write(b"YUV4MPEG2 W%d H%d F%d:1 Ip A1:1 C420jpeg XYSCSS=420JPEG XCOLORRANGE=LIMITED\n" % (WIDTH, HEIGHT, FPS))
    phases = np.zeros(USERS + 1)
    samples_sent, sharing, next_block = 0, 0, 0
    block = STREAM_RATE // 100
    for n in range(args.frames):
        now = n * 1_000_000 // FPS
        if n == 30:
            inputs["2"].active = False                      # onRawDataStatusChanged(off)
        if n == 60 and "9" in inputs:
            comp.remove_input("9")                          # the user left: the layout re-flows
            del inputs["9"]
            mixer.remove_input("9")
            del voices["9"]
        if n == 45 and sharing == 0:
            inputs["share:1"] = comp.add_input("share:1")   # onShareStatusChanged(start)
            comp.set_layout("share")
            sharing = 1
        if n == 105 and sharing == 1:
            comp.set_layout("grid")                         # the share stopped
            comp.remove_input("share:1")
            del inputs["share:1"]
            sharing = 2
        speaker = now // 2_000_000 % 4 + 3
        if n % 3 == 0:
            captions.set_parameter("text.text", "User %d: caption line %d" % (speaker, n // 3))
        comp.set_roles(speaker=str(speaker), share="share:1" if sharing == 1 else None)
        for name, made in inputs.items():
            if name == "share:1":
                if n % 6 == 0:
                    made.submit(*user_picture(0, 0, 1280, 720), time_us=now)
            elif name != "2" and (n + int(name) - 1) % 2 == 0:
                made.submit(*user_picture(int(name), n), time_us=now)
        y, u, v = comp.compose(n)
        out.write(b"FRAME\n")
        for plane in (y, u, v):
            out.write(np.ascontiguousarray(plane).tobytes())
        # The one-way streams up to this frame's end plus two blocks (what the SDK delivered
        # by now): the speaker loud and 6 dB up in the mix, everyone else quiet.
        blocks = rawfx.Mixer.blocks_for_frame(n, FPS)
        while next_block < blocks.stop + 2:
            t = (next_block * block + np.arange(block)) / STREAM_RATE
            for name, voice in voices.items():
                user = int(name)
                phase = phases[user] + 2 * np.pi * (110 + 15 * (user - 1)) * np.arange(1, block + 1) / STREAM_RATE
                phases[user] = phase[-1]
                level = 0.3 * (0.5 + 0.5 * np.sin(2 * np.pi * 4 * t)) if user == speaker else 0.002
                voice.set_gain(6 if user == speaker else 0)
                voice.submit((32767 * level * (0.6 * np.sin(phase) + 0.3 * np.sin(2 * phase))).astype(np.int16), STREAM_RATE)
            next_block += 1
        # The program's audio of this frame: its blocks, mixed (48000 Hz mono, 10 ms each).
        for b in blocks:
            mixed = mixer.mix(b)
            if wav is not None:
                wav.writeframes(mixed.tobytes())
            samples_sent += mixed.size
    out.flush()
    if wav is not None:
        wav.close()
    if out is not sys.stdout.buffer:
        out.close()
    print("recording_bot: %d frames, %d audio samples at %d Hz; last scene %s"
          % (args.frames, samples_sent, RATE, json.dumps(comp.scene)), file=sys.stderr)
    comp.close()
    mixer.close()
    registry.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
