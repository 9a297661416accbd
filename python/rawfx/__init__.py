"""RawFX from Python: filter chains over numpy arrays, through librawfx (rawfx_embed.h).

    import numpy as np, rawfx
    registry = rawfx.Registry()                       # RAWFX_PLUGIN_PATH, then the installed plugins
    chain = registry.video_chain("scale=width=640:height=360,rotate=angle=90")
    y, u, v = chain.process(y, u, v)                  # I420 planes: 2-D uint8 arrays, any row stride
    audio = registry.audio_chain("denoise=level=-30")
    out = audio.process(pcm)                          # int16, shape (frames,) or (frames, channels)

Threads, as the C API: process, drain and metrics on one thread per chain; set_parameter,
set_bypass and replace from any other thread while it processes.
"""
import ctypes
import json

import numpy as np

from . import _library as _c

__all__ = ["RawFXError", "Registry", "VideoChain", "AudioChain", "library_path", "set_log_callback", "sync_log",
           "set_thread_count", "thread_count"]

_lib, library_path = _c.load()


class RawFXError(Exception):
    """A failed librawfx call: `code` (an int), `name` ("RAWFX_E_CHAIN") and the message."""

    def __init__(self, call, code):
        self.code = code
        self.name = _lib.rawfx_result_name(code).decode()
        self.message = _lib.rawfx_last_error().decode()
        super().__init__("%s: %s: %s" % (call, self.name, self.message))


def _check(call, code):
    if code != 0:
        raise RawFXError(call, code)


def _text(value):
    return value.encode() if isinstance(value, str) else bytes(value)


def _strings(count, item):
    return [item(i).decode() for i in range(count)]


LOG_LEVELS = ("debug", "info", "warning", "error")  # rawfx_log_severity 0..3
_log_callback = None  # the ctypes function librawfx holds: kept alive here


def set_log_callback(callback, level="warning"):
    """Sends the log lines of the engine and its plugins from `level` up ("debug", "info",
    "warning", "error") to `callback(level, source, message)`, all three str, instead of
    standard error (rawfx_set_log_callback). It runs on the engine's logging thread, one line
    at a time; `callback=None` restores standard error."""
    global _log_callback
    if level not in LOG_LEVELS:
        raise ValueError("level must be one of %s, not %r" % (", ".join(LOG_LEVELS), level))
    if callback is None:
        _check("rawfx_set_log_callback", _lib.rawfx_set_log_callback(_c.LOG_CALLBACK(), None, LOG_LEVELS.index(level)))
        _log_callback = None
        return

    def deliver(_user_data, severity, source, message):
        callback(LOG_LEVELS[severity], source.decode(errors="replace"), message.decode(errors="replace"))

    function = _c.LOG_CALLBACK(deliver)
    _check("rawfx_set_log_callback", _lib.rawfx_set_log_callback(function, None, LOG_LEVELS.index(level)))
    _log_callback = function


def sync_log():
    """Returns when every line logged so far has reached the callback (rawfx_log_sync)."""
    _lib.rawfx_log_sync()


def set_thread_count(count):
    """Sets the engine's thread pool to `count` threads, the calling one included
    (rawfx_set_thread_count): scale, rotate and mirror split each frame over it, and an
    isolated stage its copy of each frame into the helper. 1, the default, uses no pool.
    One pool per process; call it from a control thread, not from a frame callback."""
    if not isinstance(count, int) or isinstance(count, bool):
        raise TypeError(f"set_thread_count: count must be an int, got {type(count).__name__}")
    if count < 1:
        raise ValueError(f"set_thread_count: count {count} is not a thread count: expected 1 (no pool) to 64")
    _check("rawfx_set_thread_count", _lib.rawfx_set_thread_count(min(count, 64)))


def thread_count():
    """The engine's thread pool size, the calling thread included (rawfx_thread_count)."""
    return _lib.rawfx_thread_count()


class Registry:
    """The plugins on a search path (rawfx_registry_open): `search_path` entries first, then
    $RAWFX_PLUGIN_PATH (with use_environment), then librawfx's own plugin directory."""

    _handle = None  # set once the C object exists: close() is safe after a failed __init__

    def __init__(self, search_path=(), use_environment=True, default_directory=True, allow_untrusted=False):
        entries = [_text(p) for p in search_path]
        array = (ctypes.c_char_p * max(len(entries), 1))(*entries)
        options = _c.RegistryOptions(ctypes.sizeof(_c.RegistryOptions), array, len(entries),
                                     int(use_environment), int(not default_directory), int(allow_untrusted))
        handle = ctypes.c_void_p()
        _check("rawfx_registry_open", _lib.rawfx_registry_open(ctypes.byref(options), ctypes.byref(handle)))
        self._handle = handle

    def close(self):
        if self._handle:
            _lib.rawfx_registry_close(self._handle)
            self._handle = None

    def __del__(self):
        # At interpreter exit the module's globals may already be gone; the process frees all.
        if _lib is not None:
            self.close()

    @property
    def filters(self):
        return _strings(_lib.rawfx_registry_filter_count(self._handle),
                        lambda i: _lib.rawfx_registry_filter_id(self._handle, i))

    @property
    def failures(self):
        """The plugin files that failed to load or were refused, each with its reason."""
        return _strings(_lib.rawfx_registry_failure_count(self._handle),
                        lambda i: _lib.rawfx_registry_failure(self._handle, i))

    @property
    def search_path(self):
        return _strings(_lib.rawfx_registry_search_path_count(self._handle),
                        lambda i: _lib.rawfx_registry_search_path_entry(self._handle, i))

    def video_chain(self, text):
        return VideoChain(self, text)

    def audio_chain(self, text):
        return AudioChain(self, text)


def _metrics(function, handle):
    count = ctypes.c_size_t()
    function(handle, None, 0, ctypes.byref(count))  # RAWFX_E_BUFFER_TOO_SMALL, with the count
    stages = (_c.StageMetrics * max(count.value, 1))()
    for stage in stages:
        stage.struct_size = ctypes.sizeof(_c.StageMetrics)
    _check("metrics", function(handle, stages, len(stages), ctypes.byref(count)))
    return [{"name": s.name.decode(), "frames": s.frames, "errors": s.errors, "drops": s.drops,
             "bypassed": s.bypassed, "p50_ns": s.p50_ns, "p99_ns": s.p99_ns} for s in stages[:count.value]]


def _metrics_json(function, handle):
    length = ctypes.c_size_t()
    function(handle, None, 0, ctypes.byref(length))
    buffer = ctypes.create_string_buffer(length.value + 1)
    _check("metrics_json", function(handle, buffer, len(buffer), ctypes.byref(length)))
    return buffer.value.decode()


def _plane(array, name, height, width, writable=False):
    """Checks one I420 plane: a 2-D uint8 array of the plane's size whose rows may be spaced
    by any stride (a slice of a wider buffer) but whose samples are contiguous."""
    if not isinstance(array, np.ndarray) or array.dtype != np.uint8 or array.ndim != 2:
        raise ValueError("%s: expected a 2-D numpy array of uint8, got %s" % (
            name, type(array).__name__ if not isinstance(array, np.ndarray) else "%d-D %s" % (array.ndim, array.dtype)))
    if array.shape != (height, width):
        raise ValueError("%s: shape %s; expected %s (rows, columns)" % (name, array.shape, (height, width)))
    if array.strides[1] != 1 or array.strides[0] < width:
        raise ValueError("%s: strides %s; expected samples next to each other (column stride 1) and a row "
                         "stride of at least %d" % (name, array.strides, width))
    if writable and not array.flags.writeable:
        raise ValueError("%s: the array is read-only; the chain writes into it" % name)
    return array


def _frame(y, u, v, color_range, rotation, timestamp_us, writable=False):
    if not isinstance(y, np.ndarray) or y.ndim != 2:
        raise ValueError("y: expected a 2-D numpy array of uint8")
    height, width = y.shape
    ch, cw = (height + 1) // 2, (width + 1) // 2
    planes = [_plane(y, "y", height, width, writable), _plane(u, "u", ch, cw, writable), _plane(v, "v", ch, cw, writable)]
    frame = _c.VideoFrame()
    frame.struct_size = ctypes.sizeof(_c.VideoFrame)
    frame.width, frame.height = width, height
    frame.pixel_format = _c.PIXEL_I420
    frame.color_range = {"limited": 0, "full": 1}[color_range]
    frame.rotation = rotation
    for i, plane in enumerate(planes):
        frame.planes[i] = plane.ctypes.data
        frame.strides[i] = plane.strides[0]
    frame.timestamp_us = timestamp_us
    return frame


def _planes_of(frame, copy=True):
    """The three planes of a C frame as 2-D uint8 arrays (copies, or views over its memory)."""
    height, width = frame.height, frame.width
    out = []
    for i, (h, w) in enumerate([(height, width), ((height + 1) // 2, (width + 1) // 2), ((height + 1) // 2, (width + 1) // 2)]):
        stride = frame.strides[i]
        buffer = (ctypes.c_uint8 * (stride * (h - 1) + w)).from_address(frame.planes[i])
        view = np.lib.stride_tricks.as_strided(np.frombuffer(buffer, dtype=np.uint8), shape=(h, w), strides=(stride, 1))
        out.append(view.copy() if copy else view)
    return tuple(out)


class _Chain:
    """What video and audio chains share: the handle, run-time control and metrics, through
    the rawfx_<kind>_chain_* functions."""

    _handle = None  # set once the C object exists: close() is safe after a failed __init__
    _kind = None    # "video" or "audio"

    def __init__(self, registry, text):
        handle = ctypes.c_void_p()
        self._call("create", registry._handle, _text(text), ctypes.byref(handle))
        self._handle = handle

    def _function(self, name):
        return getattr(_lib, "rawfx_%s_chain_%s" % (self._kind, name))

    def _call(self, name, *arguments):
        _check("rawfx_%s_chain_%s" % (self._kind, name), self._function(name)(*arguments))

    def close(self):
        if self._handle:
            self._function("destroy")(self._handle)
            self._handle = None

    def __del__(self):
        # At interpreter exit the module's globals may already be gone; the process frees all.
        if _lib is not None:
            self.close()

    @property
    def latency(self):
        """Delay from input to output (video: frames; audio: frames at the output rate). A
        file's first `latency` outputs precede the input: drop them, and drain at the end."""
        return self._function("latency")(self._handle)

    def set_parameter(self, address, value):
        """"scale.width" or "1.width" to a value (chain syntax; True/False for booleans), from
        any thread; applied between two frames or chunks, keeping the filter's state."""
        text = str(value).lower() if isinstance(value, bool) else str(value)
        self._call("set_parameter", self._handle, _text(address), _text(text))

    def set_bypass(self, stage, bypassed=True):
        """Bypasses a stage ("mirror" or "0") or re-enables it, from any thread."""
        self._call("set_bypass", self._handle, _text(stage), int(bool(bypassed)))

    def metrics(self):
        """One dict per stage: name, frames, errors, drops, bypassed, p50_ns, p99_ns."""
        return _metrics(self._function("metrics"), self._handle)

    def metrics_json(self):
        return json.loads(_metrics_json(self._function("metrics_json"), self._handle))


class VideoChain(_Chain):
    """A video chain (rawfx_video_chain_*): I420 frames as three 2-D uint8 arrays."""

    _kind = "video"
    _last = None  # the last input, which drain repeats

    def negotiate(self, width, height, color_range="limited", rotation=0):
        """Negotiates for frames of this size; returns the output's (width, height)."""
        fmt = _c.VideoFormat(ctypes.sizeof(_c.VideoFormat), width, height, _c.PIXEL_I420,
                             {"limited": 0, "full": 1}[color_range], rotation)
        out = _c.VideoFormat()
        self._call("negotiate", self._handle, ctypes.byref(fmt), ctypes.byref(out))
        return out.width, out.height

    def process(self, y, u, v, color_range="limited", rotation=0, timestamp_us=0, copy=True):
        """Runs one frame; returns the output planes (y, u, v). In-place filters edit the given
        arrays. With copy=False the arrays are views of the engine's buffers, valid until the
        next call on this chain."""
        frame = _frame(y, u, v, color_range, rotation, timestamp_us)
        out = _c.VideoFrame()
        self._call("process", self._handle, ctypes.byref(frame), ctypes.byref(out))
        self._last = (y, u, v, color_range, rotation)
        return _planes_of(out, copy)

    def process_into(self, y, u, v, color_range="limited", rotation=0, timestamp_us=0):
        """Runs one frame and writes the result back into the same arrays (an SDK
        pre-processor's frame); the chain must keep the size."""
        frame = _frame(y, u, v, color_range, rotation, timestamp_us, writable=True)
        self._call("process_into", self._handle, ctypes.byref(frame), ctypes.byref(frame))

    def drain(self):
        """The frames a delaying filter still holds, pushed out by repeating the last input."""
        if self._last is None:
            return []
        y, u, v, color_range, rotation = self._last
        frame = _frame(y, u, v, color_range, rotation, 0)
        frames = []
        emit = _c.VIDEO_EMIT(lambda _, f: frames.append(_planes_of(f.contents)))
        self._call("drain", self._handle, ctypes.byref(frame), emit, None)
        return frames

    def replace(self, registry, text, negotiate_for=None):
        """Replaces the whole chain from the next frame; negotiate_for=(width, height) checks it now."""
        fmt = None
        if negotiate_for is not None:
            fmt = ctypes.byref(_c.VideoFormat(ctypes.sizeof(_c.VideoFormat), negotiate_for[0], negotiate_for[1],
                                             _c.PIXEL_I420, 0, 0))
        self._call("replace", self._handle, registry._handle, _text(text), fmt)

    @property
    def swap_count(self):
        return _lib.rawfx_video_chain_swap_count(self._handle)


class AudioChain(_Chain):
    """An audio chain (rawfx_audio_chain_*) over interleaved int16 PCM."""

    _kind = "audio"
    _channels = None  # the negotiated input's

    def negotiate(self, sample_rate, channels):
        """Negotiates for this format; returns the output's (sample_rate, channels)."""
        fmt = _c.AudioFormat(ctypes.sizeof(_c.AudioFormat), sample_rate, channels)
        out = _c.AudioFormat()
        self._call("negotiate", self._handle, ctypes.byref(fmt), ctypes.byref(out))
        self._rate, self._channels, self._out_channels = sample_rate, channels, out.channels
        return out.sample_rate, out.channels

    def _collector(self):
        blocks = []

        def collect(_, block):
            b = block.contents
            count = b.frame_count * b.channels
            samples = (ctypes.c_int16 * count).from_address(b.samples) if count else ()
            blocks.append(np.array(samples, dtype=np.int16).reshape(b.frame_count, b.channels))
        return blocks, _c.AUDIO_EMIT(collect)

    def _joined(self, blocks):
        channels = self._out_channels
        return np.concatenate(blocks) if blocks else np.zeros((0, channels), dtype=np.int16)

    def process(self, pcm, timestamp_us=0):
        """Runs a chunk of any length: int16, shape (frames,) for mono or (frames, channels).
        Returns what came out, shape (frames, output channels); the chain re-blocks, so the
        output may be shorter or longer than the chunk."""
        if self._channels is None:
            raise RuntimeError("negotiate(sample_rate, channels) first")
        pcm = np.asarray(pcm)
        if pcm.dtype != np.int16:
            raise ValueError("pcm: dtype %s; expected int16" % pcm.dtype)
        if pcm.ndim == 1:
            pcm = pcm.reshape(-1, 1)
        if pcm.ndim != 2 or pcm.shape[1] != self._channels:
            raise ValueError("pcm: shape %s; expected (frames, %d)" % (pcm.shape, self._channels))
        pcm = np.ascontiguousarray(pcm)
        block = _c.AudioFrame(ctypes.sizeof(_c.AudioFrame), pcm.ctypes.data, pcm.shape[0], self._rate, self._channels,
                              _c.AUDIO_SOURCE_FILE, 0, 0, timestamp_us)
        blocks, emit = self._collector()
        self._call("process", self._handle, ctypes.byref(block), emit, None)
        return self._joined(blocks)

    def drain(self):
        """At the end of a stream: the rest, so that the output has the input's length once
        the first `latency` frames are dropped."""
        blocks, emit = self._collector()
        self._call("drain", self._handle, emit, None)
        return self._joined(blocks)


# The SDK hooks (rawfx_hooks.h), over the helpers above.
from .hooks import (MIXED, ONE_WAY, SHARED, PreProcessor, ProductionStudio, ReceiveVideo,  # noqa: E402
                    ShareSource, VideoSource, VirtualMic, VirtualSpeaker, user_key)

__all__ += ["MIXED", "ONE_WAY", "SHARED", "PreProcessor", "ProductionStudio", "ReceiveVideo", "ShareSource", "VideoSource", "VirtualMic", "VirtualSpeaker",
            "user_key"]
