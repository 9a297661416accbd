"""What a call from Python costs: the rawfx package against the bare C call, in one run.

    RAWFX_LIBRARY=.build/release/libRawFXEmbed.so python3 python/bench.py [--quick]

Video: 640x360 I420 frames through `scale=width=426:height=240` (a gallery tile).
Audio: 10 ms blocks of 48 kHz mono through `denoise=level=-30`, and through "" (a copy: the
wrapper's cost alone).

"bare" is the C function called through ctypes with its structs made beforehand, as a C
caller would have them: the least any Python binding can cost. Each round times every case
for `calls` calls, in turn, so that a slow phase of the machine touches them all; the table
gives each case's median per call over the rounds, and its cost over the bare call as the
median of the per-round differences. Two input frames alternate, so the package reads a
plane's address on every call, as it must for a decoder's new arrays. Figures only: a shared
machine is too noisy for limits (docs/benchmarks.md, "Python").
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rawfx  # noqa: E402
from rawfx import _library as _c  # noqa: E402

_lib = rawfx._lib
# The bare calls through a library handle of their own, declared with plain ctypes types: no
# checks of the package's, what a C caller pays.
_bare = ctypes.CDLL(rawfx.library_path)
_P = ctypes.c_void_p
for _name, _argtypes in {"rawfx_video_chain_process": [_P, _P, _P], "rawfx_video_chain_process_into": [_P, _P, _P],
                         "rawfx_audio_chain_process_into": [_P, _P, _P, ctypes.c_uint32, _P],
                         "rawfx_audio_chain_process": [_P, _P, _c.AUDIO_EMIT, _P]}.items():
    getattr(_bare, _name).argtypes = _argtypes
    getattr(_bare, _name).restype = ctypes.c_int32


def picture(width, height, seed):
    rng = np.random.default_rng(seed)
    return (rng.integers(16, 236, (height, width), dtype=np.uint8),
            rng.integers(16, 241, ((height + 1) // 2, (width + 1) // 2), dtype=np.uint8),
            rng.integers(16, 241, ((height + 1) // 2, (width + 1) // 2), dtype=np.uint8))


def c_frame(planes):
    """A rawfx_video_frame over three planes, made once (what a C caller keeps)."""
    frame = _c.VideoFrame()
    frame.struct_size = ctypes.sizeof(_c.VideoFrame)
    frame.height, frame.width = planes[0].shape
    frame.pixel_format = _c.PIXEL_I420
    for i, plane in enumerate(planes):
        frame.planes[i] = plane.ctypes.data
        frame.strides[i] = plane.strides[0]
    return frame


def video_cases(registry):
    frames = [picture(640, 360, seed) for seed in (1, 2)]
    chain = registry.video_chain("scale=width=426:height=240")
    assert chain.negotiate(640, 360) == (426, 240)
    canvas = [np.zeros((1080, 1920), np.uint8), np.zeros((540, 960), np.uint8), np.zeros((540, 960), np.uint8)]
    tile = (canvas[0][120:360, 426:852], canvas[1][60:180, 213:426], canvas[2][60:180, 213:426])
    structs = [c_frame(f) for f in frames]
    refs = [ctypes.byref(s) for s in structs]
    output = _c.VideoFrame()
    output_ref = ctypes.byref(output)
    tile_ref = ctypes.byref(c_frame(tile))
    handle, process, process_into = chain._handle, _bare.rawfx_video_chain_process, _bare.rawfx_video_chain_process_into
    state = {"i": 0}

    def turn():
        state["i"] ^= 1
        return state["i"]

    def bare():
        process(handle, refs[turn()], output_ref)

    def bare_into_tile():
        process_into(handle, refs[turn()], tile_ref)

    def public_view():
        chain.process(*frames[turn()], copy=False)

    def public_copy():
        chain.process(*frames[turn()])

    def public_into_tile():
        chain.process_into(*frames[turn()], out=tile)

    def public_view_and_blit():
        y, u, v = chain.process(*frames[turn()], copy=False)
        tile[0][...] = y
        tile[1][...] = u
        tile[2][...] = v

    return [("video 640x360 -> 426x240: bare rawfx_video_chain_process", bare, None),
            ("  process(copy=False)", public_view, "bare"),
            ("  process() (copies the result)", public_copy, "bare"),
            ("  process(copy=False) + numpy blit into a tile", public_view_and_blit, "bare"),
            ("video: bare rawfx_video_chain_process_into a tile", bare_into_tile, None),
            ("  process_into(out=tile views)", public_into_tile, "bare_into"),
            ], {"bare": bare, "bare_into": bare_into_tile}


def audio_cases(registry, text, label):
    rng = np.random.default_rng(3)
    signal = (rng.standard_normal(48000) * 3000).astype(np.int16)
    chain = registry.audio_chain(text)
    chain.negotiate(48000, 1)
    block = _c.AudioFrame(ctypes.sizeof(_c.AudioFrame), signal.ctypes.data, 480, 48000, 1, _c.AUDIO_SOURCE_FILE, 0, 0, 0)
    block_ref = ctypes.byref(block)
    out = np.empty((chain.max_output_frames(480) + 480, 1), np.int16)
    out_address, capacity = out.ctypes.data, out.shape[0]
    written = ctypes.c_uint32()
    written_ref = ctypes.byref(written)
    handle, process_into, process = chain._handle, _bare.rawfx_audio_chain_process_into, _bare.rawfx_audio_chain_process
    base = signal.ctypes.data
    state = {"offset": 0}

    def advance():
        state["offset"] = (state["offset"] + 480) % 47520
        return state["offset"]

    def bare():
        block.samples = base + 2 * advance()
        process_into(handle, block_ref, out_address, capacity, written_ref)

    emit = _c.AUDIO_EMIT(lambda _, b: None)

    def bare_callback():
        block.samples = base + 2 * advance()
        process(handle, block_ref, emit, None)

    def public():
        offset = advance()
        chain.process(signal[offset:offset + 480])

    def public_out():
        offset = advance()
        chain.process(signal[offset:offset + 480], out=out)

    key = "bare_audio_" + label
    return [("audio 10 ms %s: bare rawfx_audio_chain_process_into" % label, bare, None),
            ("  %s: bare rawfx_audio_chain_process (a ctypes emit callback)" % label, bare_callback, key),
            ("  %s: process(pcm) (returns a new array)" % label, public, key),
            ("  %s: process(pcm, out=array)" % label, public_out, key)], {key: bare}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 50 calls: proves it runs (CI)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=300)
    arguments = parser.parse_args()
    rounds, calls = (3, 50) if arguments.quick else (arguments.rounds, arguments.calls)

    registry = rawfx.Registry()
    cases, bares = video_cases(registry)
    for text, label in (("denoise=level=-30", "denoise"), ("", "copy")):
        more, more_bares = audio_cases(registry, text, label)
        cases += more
        bares.update(more_bares)

    times = {name: [] for name, _, _ in cases}
    for _ in range(rounds):
        for name, function, _ in cases:
            for _ in range(10):
                function()  # warm: caches, the branch predictor
            start = time.perf_counter_ns()
            for _ in range(calls):
                function()
            times[name].append((time.perf_counter_ns() - start) / calls / 1000)

    by_function = {function: name for name, function, _ in cases}
    print("rawfx %s (%s), numpy %s, Python %s; %d rounds of %d calls" % (
        rawfx.__name__, rawfx.library_path, np.__version__, sys.version.split()[0], rounds, calls))
    print("%-62s %10s %14s" % ("case", "us/call", "over bare, us"))
    for name, function, base in cases:
        median = statistics.median(times[name])
        if base is None:
            print("%-62s %10.1f %14s" % (name, median, ""))
        else:
            reference = times[by_function[bares[base]]]
            over = statistics.median(a - b for a, b in zip(times[name], reference))
            print("%-62s %10.1f %+14.1f" % (name, median, over))


if __name__ == "__main__":
    main()
