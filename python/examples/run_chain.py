#!/usr/bin/env python3
"""Runs a RawFX chain over a Y4M or WAV file from Python, as `rawfx run` does.

    python3 run_chain.py --vf 'scale=width=320:height=180,rotate=angle=90' in.y4m out.y4m
    python3 run_chain.py --af 'denoise=level=-30' [--chunk FRAMES] in.wav out.wav

The output is byte for byte what `rawfx run` writes for the same chain and input (8-bit 4:2:0
Y4M with the header fields FFmpeg writes, in its order; 16-bit PCM WAV, mono or stereo): the
header keeps the input's fields, the chain's latency is handled the same way (first `latency`
outputs dropped, the tail drained).
"""
import argparse
import struct
import sys

import numpy as np

import rawfx


def y4m_header(line, width, height, out_width, out_height):
    """The input's header fields with the output's size; a pixel aspect turned with the picture."""
    turned = width != height and (out_width, out_height) == (height, width)
    tokens = []
    for token in line.split(" "):
        if token.startswith("W"):
            token = "W%d" % out_width
        elif token.startswith("H"):
            token = "H%d" % out_height
        elif token.startswith("A") and turned and ":" in token:
            a, b = token[1:].split(":")
            token = "A%s:%s" % (b, a)
        tokens.append(token)
    return (" ".join(tokens) + "\n").encode()


def run_video(registry, text, source, target):
    with open(source, "rb") as f:
        line = f.readline().decode().rstrip("\n")
        if not line.startswith("YUV4MPEG2 "):
            sys.exit("run_chain: %s is not a Y4M file" % source)
        fields = {t[0]: t[1:] for t in line.split(" ")[1:]}
        width, height = int(fields["W"]), int(fields["H"])
        color_range = "full" if "XCOLORRANGE=FULL" in line.split(" ") else "limited"
        chain = registry.video_chain(text)
        out_width, out_height = chain.negotiate(width, height, color_range)
        latency = chain.latency
        cw, ch = (width + 1) // 2, (height + 1) // 2
        with open(target, "wb") as out:
            out.write(y4m_header(line, width, height, out_width, out_height))

            def write(planes):
                nonlocal latency
                if latency > 0:
                    latency -= 1
                    return
                out.write(b"FRAME\n")
                for plane in planes:
                    out.write(np.ascontiguousarray(plane).tobytes())

            frames = 0
            while f.readline().startswith(b"FRAME"):
                picture = np.frombuffer(f.read(width * height + 2 * cw * ch), dtype=np.uint8).copy()
                y = picture[:width * height].reshape(height, width)
                u = picture[width * height:width * height + cw * ch].reshape(ch, cw)
                v = picture[width * height + cw * ch:].reshape(ch, cw)
                write(chain.process(y, u, v, color_range))
                frames += 1
            for planes in chain.drain():
                write(planes)
    print("run_chain: %d frames; %s" % (frames, chain.metrics_json()), file=sys.stderr)


def run_audio(registry, text, source, target, chunk):
    with open(source, "rb") as f:
        riff = f.read(12)
        if riff[:4] != b"RIFF" or riff[8:12] != b"WAVE":
            sys.exit("run_chain: %s is not a WAV file" % source)
        rate = channels = None
        while True:
            head = f.read(8)
            if len(head) < 8:
                sys.exit("run_chain: no data chunk")
            kind, size = head[:4], struct.unpack("<I", head[4:])[0]
            if kind == b"data":
                break
            body = f.read(size + (size & 1))
            if kind == b"fmt ":
                _, channels, rate, _, _, bits = struct.unpack("<HHIIHH", body[:16])
                if bits != 16:
                    sys.exit("run_chain: only 16-bit PCM is supported")
        pcm = np.frombuffer(f.read(size), dtype="<i2").reshape(-1, channels)
    chain = registry.audio_chain(text)
    out_rate, out_channels = chain.negotiate(rate, channels)
    chunk = chunk or rate // 10  # 100 ms, as rawfx run reads
    pieces = [chain.process(pcm[start:start + chunk]) for start in range(0, len(pcm), chunk)]
    pieces.append(chain.drain())
    output = np.concatenate(pieces)[chain.latency:]
    data = output.astype("<i2").tobytes()
    with open(target, "wb") as out:
        out.write(b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " +
                  struct.pack("<IHHIIHH", 16, 1, out_channels, out_rate, out_rate * out_channels * 2, out_channels * 2, 16) +
                  b"data" + struct.pack("<I", len(data)) + data)
    print("run_chain: %s" % chain.metrics(), file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plugin-path", action="append", default=[])
    parser.add_argument("--chunk", type=int, default=0, help="audio frames per process call (default 100 ms)")
    kind = parser.add_mutually_exclusive_group(required=True)
    kind.add_argument("--vf")
    kind.add_argument("--af")
    parser.add_argument("input")
    parser.add_argument("output")
    args = parser.parse_args()
    registry = rawfx.Registry(search_path=args.plugin_path)
    for failure in registry.failures:
        print("run_chain: warning: %s" % failure, file=sys.stderr)
    try:
        if args.vf is not None:
            run_video(registry, args.vf, args.input, args.output)
        else:
            run_audio(registry, args.af, args.input, args.output, args.chunk)
    except rawfx.RawFXError as error:
        sys.exit("run_chain: %s" % error)


if __name__ == "__main__":
    main()
