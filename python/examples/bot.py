#!/usr/bin/env python3
"""The shape of a meeting bot with RawFX: a fake SDK session loop feeding the hooks.

    python3 bot.py --vf CHAIN --size WxH --af CHAIN in.y4m in.wav out.y4m out.wav

A real bot gets the same calls from its SDK binding (py-zoom-meeting-sdk, or your own over
the C++ SDK): where this file says "the SDK calls", your binding's callback forwards to the
hook. Here a FakeSession plays the SDK's part:

- the virtual camera (VideoSource): the SDK calls on_initialize with its sender and the
  capability it suggests (`--size`), then on_start_send; the bot's capture loop pushes a frame
  every 40 ms (from in.y4m), and the SDK's sender receives packed I420 at that size, which
  this file writes to out.y4m;
- the received audio (VirtualSpeaker): the SDK delivers the session's mixed audio every 10 ms
  (from in.wav, then silence, as a live session goes on); the sink receives it processed, and
  the bot records it to out.wav, less the chain's latency (the first `latency` frames precede
  the audio) and cut to the input's length.

With a `--vf` chain that ends at `--size`, out.y4m is byte for byte `rawfx run --vf`'s output;
out.wav is `rawfx run --af`'s (python/tests/test_hooks.py checks both).
"""
import argparse
import struct
import sys

import numpy as np

import rawfx
from run_chain import y4m_header  # the header as rawfx writes it (same folder)


def read_y4m(path):
    with open(path, "rb") as f:
        header = f.readline().decode().rstrip("\n")
        fields = {t[0]: t[1:] for t in header.split(" ")[1:]}
        width, height = int(fields["W"]), int(fields["H"])
        cw, ch = (width + 1) // 2, (height + 1) // 2
        frames = []
        while f.readline().startswith(b"FRAME"):
            picture = np.frombuffer(f.read(width * height + 2 * cw * ch), dtype=np.uint8).copy()
            frames.append((picture[:width * height].reshape(height, width),
                           picture[width * height:width * height + cw * ch].reshape(ch, cw),
                           picture[width * height + cw * ch:].reshape(ch, cw)))
    return header, width, height, frames


def read_wav(path):
    with open(path, "rb") as f:
        f.read(12)
        while True:
            kind, size = struct.unpack("<4sI", f.read(8))
            if kind == b"data":
                break
            body = f.read(size + (size & 1))
            if kind == b"fmt ":
                _, channels, rate = struct.unpack("<HHI", body[:8])
        return rate, channels, np.frombuffer(f.read(size), dtype="<i2").reshape(-1, channels)


def write_wav(path, rate, channels, pcm):
    data = pcm.astype("<i2").tobytes()
    with open(path, "wb") as out:
        out.write(b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " +
                  struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * channels * 2, channels * 2, 16) +
                  b"data" + struct.pack("<I", len(data)) + data)


class FakeSession:
    """The SDK's side: it owns the senders and calls the hooks, with the SDK's rules checked."""

    def __init__(self, size):
        self.size = size
        self.sending = False
        self.sent_frames = []

    # The SDK's video sender (IZoomVideoSDKVideoSender::sendVideoFrame).
    def send_video_frame(self, frame, width, height, rotation, fmt):
        assert self.sending, "sendVideoFrame outside onStartSend..onStopSend"
        assert (width, height) == self.size and len(frame) == width * height * 3 // 2, (width, height, len(frame))
        self.sent_frames.append(frame.tobytes())  # the buffer is valid only during the call
        return 0

    def join(self, camera):
        width, height = self.size
        camera.on_initialize(self.send_video_frame, supported=[(1280, 720, 30), (width, height, 25)],
                             suggested=(width, height, 25))
        self.sending = True
        camera.on_start_send()

    def leave(self, camera):
        camera.on_stop_send()
        self.sending = False
        camera.on_uninitialized()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vf", required=True)
    parser.add_argument("--size", required=True, help="the capability the fake SDK suggests, WxH")
    parser.add_argument("--af", required=True)
    parser.add_argument("--async-speaker", action="store_true", help="process received audio on the hook's worker")
    parser.add_argument("y4m")
    parser.add_argument("wav")
    parser.add_argument("out_y4m")
    parser.add_argument("out_wav")
    args = parser.parse_args()
    size = tuple(int(n) for n in args.size.split("x"))

    header, width, height, frames = read_y4m(args.y4m)
    rate, channels, pcm = read_wav(args.wav)
    registry = rawfx.Registry()
    session = FakeSession(size)
    camera = rawfx.VideoSource(registry, args.vf)
    events = []
    camera.on_lifecycle(lambda name, description, capability: events.append(name))
    received = []
    speaker = rawfx.VirtualSpeaker(registry, args.af, async_=args.async_speaker,
                                   sink=lambda stream, user, block: received.append(block))

    session.join(camera)
    # The session loop, in 10 ms ticks: audio arrives every tick, the camera pushes every 4th
    # (25 fps). A real bot's loop is the SDK's threads and its own capture timer.
    block = rate // 100
    ticks = max(len(frames) * 4, -(-len(pcm) // block))
    for tick in range(ticks):
        if tick % 4 == 0 and tick // 4 < len(frames):
            camera.push_frame(*frames[tick // 4])
        piece = pcm[tick * block:(tick + 1) * block]
        if len(piece):
            speaker.receive(rawfx.MIXED, piece, rate, timestamp_ms=tick * 10)
    speaker.drain()
    latency = speaker.latency(rawfx.MIXED)
    # The session goes on with silence until the chain has given back every input sample.
    silence = np.zeros((block, channels), dtype=np.int16)
    while sum(len(b) for b in received) < latency + len(pcm):
        speaker.receive(rawfx.MIXED, silence, rate)
        speaker.drain()
    session.leave(camera)
    print("bot: camera %s; events %s" % (camera.metrics()["hook"], events), file=sys.stderr)
    print("bot: speaker latency %d; %s" % (latency, speaker.metrics()["hook"]), file=sys.stderr)
    speaker.close()
    camera.close()

    with open(args.out_y4m, "wb") as out:
        out.write(y4m_header(header, width, height, *size))
        for frame in session.sent_frames:
            out.write(b"FRAME\n" + frame)
    audio = np.concatenate(received)[latency:latency + len(pcm)]
    write_wav(args.out_wav, rate, audio.shape[1], audio)


if __name__ == "__main__":
    main()
