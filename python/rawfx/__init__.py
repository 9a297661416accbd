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
import os

import numpy as np

from . import _library as _c

__all__ = ["RawFXError", "Registry", "VideoChain", "AudioChain", "Compositor", "CompositorInput", "library_path",
           "set_log_callback", "sync_log", "set_thread_count", "thread_count"]

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


def _text(value, what="argument"):
    """A str (or bytes, or a path) as the NUL-terminated UTF-8 the C API takes. Anything else,
    and text with a NUL inside (C would end it there), is refused rather than converted or cut."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str):
        data = value.encode()
    elif isinstance(value, (bytes, bytearray)):
        data = bytes(value)
    else:
        raise TypeError("%s: expected a str, got %s" % (what, type(value).__name__))
    if b"\0" in data:
        raise ValueError("%s: a NUL character at offset %d; C strings end there, so it is refused" % (what, data.index(b"\0")))
    return data


_I64 = 2**63


def _range_of(color_range):
    try:
        return _RANGES[color_range]
    except (KeyError, TypeError):
        raise ValueError("color_range: %r; expected 'limited' or 'full'" % (color_range,)) from None


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
    if not 1 <= count <= 64:
        raise ValueError(f"set_thread_count: count {count} is not a thread count: expected 1 (no pool) to 64")
    _check("rawfx_set_thread_count", _lib.rawfx_set_thread_count(count))


def thread_count():
    """The engine's thread pool size, the calling thread included (rawfx_thread_count)."""
    return _lib.rawfx_thread_count()


class Registry:
    """The plugins on a search path (rawfx_registry_open): `search_path` entries first, then
    $RAWFX_PLUGIN_PATH (with use_environment), then librawfx's own plugin directory."""

    _handle = None  # set once the C object exists: close() is safe after a failed __init__

    def __init__(self, search_path=(), use_environment=True, default_directory=True, allow_untrusted=False):
        entries = [_text(p, "search_path entry") for p in search_path]
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


_U8 = np.dtype(np.uint8)
_I16 = np.dtype(np.int16)
_RANGES = {"limited": 0, "full": 1}


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


def _checked(array, name, shape, writable):
    """`_plane` with its common case first: an exact ndarray of the canonical uint8 dtype
    passes on a few attribute reads; anything else gets the full check and its message."""
    if not (type(array) is np.ndarray and array.dtype is _U8 and array.shape == shape
            and array.strides[1] == 1 and array.strides[0] >= shape[1] and (not writable or array.flags.writeable)):
        _plane(array, name, shape[0], shape[1], writable)


def _address_by_layout(array, _at=ctypes.c_void_p.from_address):
    # PyArrayObject_fields.data: the first field after PyObject_HEAD, part of numpy's C ABI
    # (extensions compiled against numpy read it there). A third of what array.ctypes.data costs.
    return _at(id(array) + 16).value


def _address_through_ctypes(array):
    return array.ctypes.data


def _pick_address():
    """The fast way to an array's data address where this interpreter and numpy lay the array
    out as checked here (CPython), numpy's own `ctypes.data` elsewhere."""
    probes = [np.zeros((3, 5), np.uint8), np.zeros((4, 9), np.uint8)[1:, 2:7], np.zeros(7, np.int16)[1:]]
    try:
        if all(_address_by_layout(p) == p.ctypes.data for p in probes):
            return _address_by_layout
    except Exception:  # noqa: BLE001 (not CPython's object layout: use numpy's accessor)
        pass
    return _address_through_ctypes


_address = _pick_address()


class _FrameBinding:
    """One rawfx_video_frame, reused for every call: checks three planes and points the
    struct at them. A plane's address is read only when another array object comes (numpy
    needs about a microsecond to tell it); the arrays are held until the next bind, so an
    address the struct keeps stays valid."""

    __slots__ = ("frame", "ref", "arrays", "what")

    def __init__(self, what="y, u, v"):
        self.frame = _c.VideoFrame()
        self.frame.struct_size = ctypes.sizeof(_c.VideoFrame)
        self.frame.pixel_format = _c.PIXEL_I420
        self.ref = ctypes.byref(self.frame)
        self.arrays = (None, None, None)
        self.what = what.split(", ")

    def bind(self, y, u, v, color_range="limited", rotation=0, timestamp_us=0, writable=False):
        if not isinstance(y, np.ndarray) or y.ndim != 2:
            raise ValueError("%s: expected a 2-D numpy array of uint8" % self.what[0])
        height, width = shape = y.shape
        chroma = ((height + 1) // 2, (width + 1) // 2)
        names = self.what
        _checked(y, names[0], shape, writable)
        _checked(u, names[1], chroma, writable)
        _checked(v, names[2], chroma, writable)
        frame = self.frame
        frame.width = width
        frame.height = height
        frame.color_range = _range_of(color_range)
        # Struct fields cut what does not fit: checked here, the common case first.
        if not (type(rotation) is int and 0 <= rotation < 2**32):
            rotation = _c.checked_integer(rotation, ctypes.c_uint32, "rotation")
        if not (type(timestamp_us) is int and -_I64 <= timestamp_us < _I64):
            timestamp_us = _c.checked_integer(timestamp_us, ctypes.c_int64, "timestamp_us")
        frame.rotation = rotation
        frame.timestamp_us = timestamp_us
        planes, strides, arrays = frame.planes, frame.strides, self.arrays
        if y is not arrays[0]:
            planes[0] = _address(y)
        if u is not arrays[1]:
            planes[1] = _address(u)
        if v is not arrays[2]:
            planes[2] = _address(v)
        strides[0] = y.strides[0]
        strides[1] = u.strides[0]
        strides[2] = v.strides[0]
        self.arrays = (y, u, v)
        return self.ref

    def release(self):
        self.arrays = (None, None, None)


def _frame(y, u, v, color_range, rotation, timestamp_us, writable=False):
    """A new C frame over three checked planes (the hooks' calls; the chains reuse theirs)."""
    binding = _FrameBinding()
    binding.bind(y, u, v, color_range, rotation, timestamp_us, writable)
    return binding.frame


def _view(address, height, width, stride, owner):
    """A (height, width) uint8 array over `stride`-spaced rows at `address`. The ctypes buffer
    under it holds `owner`, so the memory is not freed while the array lives."""
    buffer = (ctypes.c_uint8 * (stride * (height - 1) + width)).from_address(address)
    buffer._owner = owner
    return np.ndarray((height, width), _U8, buffer, 0, (stride, 1))


def _planes_of(frame, copy=True, owner=None):
    """The three planes of a C frame as 2-D uint8 arrays (copies, or views over its memory)."""
    height, width = frame.height, frame.width
    ch, cw = (height + 1) // 2, (width + 1) // 2
    views = (_view(frame.planes[0], height, width, frame.strides[0], owner),
             _view(frame.planes[1], ch, cw, frame.strides[1], owner),
             _view(frame.planes[2], ch, cw, frame.strides[2], owner))
    return tuple(view.copy() for view in views) if copy else views


class _Owned:
    """A C object and the function that frees it, freed when the last reference goes: the
    chain that made it, or a view of its buffers still held after close()."""

    __slots__ = ("handle", "destroy", "__weakref__")

    def __init__(self, handle, destroy):
        self.handle, self.destroy = handle, destroy

    def __del__(self):
        # At interpreter exit the module's globals may already be gone; the process frees all.
        if _lib is not None and self.handle:
            self.destroy(self.handle)
            self.handle = None


class _Chain:
    """What video and audio chains share: the handle, run-time control and metrics, through
    the rawfx_<kind>_chain_* functions."""

    _handle = None  # set once the C object exists: close() is safe after a failed __init__
    _owned = None   # frees the C chain once neither this object nor a view of its buffers needs it
    _kind = None    # "video" or "audio"

    def __init__(self, registry, text):
        handle = ctypes.c_void_p()
        self._call("create", registry._handle, _text(text, "chain"), ctypes.byref(handle))
        self._handle = handle
        self._owned = _Owned(handle, self._function("destroy"))

    def _function(self, name):
        return getattr(_lib, "rawfx_%s_chain_%s" % (self._kind, name))

    def _call(self, name, *arguments):
        _check("rawfx_%s_chain_%s" % (self._kind, name), self._function(name)(*arguments))

    def close(self):
        """Frees the chain now, or, while arrays returned by process(copy=False) are still
        referenced, when the last of them goes. Any call after close() raises RawFXError."""
        self._handle = None
        self._owned = None

    @property
    def latency(self):
        """Delay from input to output (video: frames; audio: frames at the output rate). A
        file's first `latency` outputs precede the input: drop them, and drain at the end."""
        return self._function("latency")(self._handle)

    def set_parameter(self, address, value):
        """"scale.width" or "1.width" to a value (chain syntax; True/False for booleans), from
        any thread; applied between two frames or chunks, keeping the filter's state."""
        text = str(value).lower() if isinstance(value, bool) else str(value)
        self._call("set_parameter", self._handle, _text(address, "address"), _text(text, "value"))

    def set_bypass(self, stage, bypassed=True):
        """Bypasses a stage ("mirror" or "0") or re-enables it, from any thread."""
        self._call("set_bypass", self._handle, _text(stage, "stage"), int(bool(bypassed)))

    def metrics(self):
        """One dict per stage: name, frames, errors, drops, bypassed, p50_ns, p99_ns."""
        return _metrics(self._function("metrics"), self._handle)

    def metrics_json(self):
        return json.loads(_metrics_json(self._function("metrics_json"), self._handle))


class VideoChain(_Chain):
    """A video chain (rawfx_video_chain_*): I420 frames as three 2-D uint8 arrays.

    A call costs the C call plus a few microseconds: the frame structs are made once and
    reused, a plane's address is read again only for another array object, and the views
    of the engine's buffers are made once per buffer and handed out again."""

    _kind = "video"
    _last = None  # the last input, which drain repeats

    def __init__(self, registry, text):
        super().__init__(registry, text)
        self._input = _FrameBinding()
        self._destination = _FrameBinding("out[0], out[1], out[2]")
        self._output = _c.VideoFrame()
        self._output_ref = ctypes.byref(self._output)
        self._views = {}  # (planes, strides, size) of an engine buffer -> its three views
        self._process = _lib.rawfx_video_chain_process
        self._process_into = _lib.rawfx_video_chain_process_into

    def close(self):
        super().close()
        self._views = {}
        self._input.release()
        self._destination.release()
        self._last = None

    def negotiate(self, width, height, color_range="limited", rotation=0):
        """Negotiates for frames of this size; returns the output's (width, height). Optional:
        a frame of another size than the last renegotiates by itself (allocating once)."""
        fmt = _c.VideoFormat(ctypes.sizeof(_c.VideoFormat), width, height, _c.PIXEL_I420,
                             _range_of(color_range), rotation)
        out = _c.VideoFormat()
        self._call("negotiate", self._handle, ctypes.byref(fmt), ctypes.byref(out))
        self._views = {}
        return out.width, out.height

    def _result_views(self, y, u, v):
        out = self._output
        planes, strides = out.planes, out.strides
        key = (planes[0], planes[1], planes[2], strides[0], strides[1], strides[2], out.width, out.height)
        views = self._views.get(key)
        if views is None:
            inputs = self._input.frame
            if (key[:6] == (inputs.planes[0], inputs.planes[1], inputs.planes[2],
                            inputs.strides[0], inputs.strides[1], inputs.strides[2])
                    and (out.width, out.height) == (inputs.width, inputs.height)):
                return y, u, v  # every filter in place: the result is the caller's arrays
            if len(self._views) >= 8:  # buffers of earlier formats
                self._views = {}
            views = self._views[key] = _planes_of(out, copy=False, owner=self._owned)
        return views

    def process(self, y, u, v, color_range="limited", rotation=0, timestamp_us=0, copy=True):
        """Runs one frame; returns the output planes (y, u, v). In-place filters edit the given
        arrays. With copy=False the arrays are views of the engine's buffers (or the given
        arrays, when every filter works in place), valid until the next call on this chain:
        the same view objects come back for the same buffer. A frame of a new size
        renegotiates the chain (allocating once)."""
        frame = self._input.bind(y, u, v, color_range, rotation, timestamp_us)
        _check("rawfx_video_chain_process", self._process(self._handle, frame, self._output_ref))
        self._last = (y, u, v, color_range, rotation)
        views = self._result_views(y, u, v)
        return tuple(view.copy() for view in views) if copy else views

    def process_into(self, y, u, v, color_range="limited", rotation=0, timestamp_us=0, out=None):
        """Runs one frame and writes the result into `out`, three writable uint8 planes of the
        output's size with any row stride: views into a larger canvas (a tile), say. Without
        `out` the result goes back into y, u, v (an SDK pre-processor's frame; the chain must
        keep the size). Destination planes that partly overlap the input are refused, and so
        is a destination of the wrong size, before the frame is consumed when the chain is
        negotiated for it."""
        if out is None:
            frame = self._input.bind(y, u, v, color_range, rotation, timestamp_us, writable=True)
            destination = frame
        else:
            if not isinstance(out, (tuple, list)) or len(out) != 3:
                raise ValueError("out: expected three planes (y, u, v), got %r" % type(out).__name__)
            frame = self._input.bind(y, u, v, color_range, rotation, timestamp_us)
            destination = self._destination.bind(out[0], out[1], out[2], color_range, rotation, timestamp_us,
                                                 writable=True)
        _check("rawfx_video_chain_process_into", self._process_into(self._handle, frame, destination))
        self._last = (y, u, v, color_range, rotation)

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
        self._call("replace", self._handle, registry._handle, _text(text, "chain"), fmt)

    @property
    def swap_count(self):
        return _lib.rawfx_video_chain_swap_count(self._handle)


class AudioChain(_Chain):
    """An audio chain (rawfx_audio_chain_*) over interleaved int16 PCM.

    process() runs through rawfx_audio_chain_process_into: no callback into Python, one
    block struct reused, and the output written straight into an array (the caller's
    `out`, or a scratch buffer whose part that was written is copied out)."""

    _kind = "audio"
    _channels = None  # the negotiated input's

    def __init__(self, registry, text):
        super().__init__(registry, text)
        self._block = _c.AudioFrame()
        self._block.struct_size = ctypes.sizeof(_c.AudioFrame)
        self._block.source = _c.AUDIO_SOURCE_FILE
        self._block_ref = ctypes.byref(self._block)
        self._pcm = None        # the last input array, whose address the block holds
        self._out = None        # the last caller's `out`, and its address
        self._out_address = 0
        self._scratch = None    # where process() writes when no `out` is given
        self._scratch_address = 0
        self._written = ctypes.c_uint32()
        self._written_ref = ctypes.byref(self._written)
        self._process_into = _lib.rawfx_audio_chain_process_into

    def close(self):
        super().close()
        self._pcm = self._out = self._scratch = None

    def negotiate(self, sample_rate, channels):
        """Negotiates for this format; returns the output's (sample_rate, channels)."""
        fmt = _c.AudioFormat(ctypes.sizeof(_c.AudioFormat), sample_rate, channels)
        out = _c.AudioFormat()
        self._call("negotiate", self._handle, ctypes.byref(fmt), ctypes.byref(out))
        self._rate, self._channels, self._out_channels = sample_rate, channels, out.channels
        self._block.sample_rate, self._block.channels = sample_rate, channels
        self._scratch = None
        return out.sample_rate, out.channels

    def max_output_frames(self, frames):
        """The most frames process() of a chunk of `frames` frames can return now
        (rawfx_audio_chain_max_output): the size for an `out` array. Exact for chains that
        keep the rate; an upper bound with a resampler."""
        return _lib.rawfx_audio_chain_max_output(self._handle, _c.checked_integer(frames, ctypes.c_uint32, "frames"))

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

    def _destination(self, out):
        """The caller's `out` checked: int16, (frames, output channels) or (frames,) for a
        mono output, contiguous and writable. Returns its address and capacity in frames."""
        if out is not self._out:
            if not isinstance(out, np.ndarray) or out.dtype != np.int16:
                raise ValueError("out: expected a numpy array of int16, got %s" % (
                    type(out).__name__ if not isinstance(out, np.ndarray) else out.dtype))
            self._out, self._out_address = None, 0
        channels = self._out_channels
        if not (out.ndim == 2 and out.shape[1] == channels or out.ndim == 1 and channels == 1):
            raise ValueError("out: shape %s; expected (frames, %d)%s" % (out.shape, channels,
                                                                        " or (frames,)" if channels == 1 else ""))
        if not out.flags.c_contiguous:
            raise ValueError("out: not contiguous; expected interleaved samples, one frame after another")
        if not out.flags.writeable:
            raise ValueError("out: the array is read-only; process writes the output into it")
        if out.shape[0] >= 2**32:
            _c.checked_integer(out.shape[0], ctypes.c_uint32, "out frames")
        if out is not self._out:
            self._out, self._out_address = out, _address(out)
        return self._out_address, out.shape[0]

    def process(self, pcm, timestamp_us=0, out=None):
        """Runs a chunk of any length: int16, shape (frames,) for mono or (frames, channels).
        Returns what came out, shape (frames, output channels); the chain re-blocks, so the
        output may be shorter or longer than the chunk. With `out` (an int16 array of at
        least max_output_frames(len(pcm)) frames, reused from call to call) the output is
        written there and the part written, out[:n], is returned; a smaller `out` is refused
        (RAWFX_E_BUFFER_TOO_SMALL) before anything is consumed."""
        if self._channels is None:
            raise RuntimeError("negotiate(sample_rate, channels) first")
        if type(pcm) is not np.ndarray:
            pcm = np.asarray(pcm)
        if pcm.dtype is not _I16 and pcm.dtype != np.int16:
            raise ValueError("pcm: dtype %s; expected int16" % pcm.dtype)
        channels = self._channels
        if not (pcm.ndim == 2 and pcm.shape[1] == channels or pcm.ndim == 1 and channels == 1):
            raise ValueError("pcm: shape %s; expected (frames, %d)" % (pcm.shape, channels))
        if not pcm.flags.c_contiguous:
            pcm = np.ascontiguousarray(pcm)
        block = self._block
        if pcm is not self._pcm:
            block.samples = _address(pcm)
            self._pcm = pcm
        frames = pcm.shape[0]
        if frames >= 2**32:
            _c.checked_integer(frames, ctypes.c_uint32, "pcm frames")
        block.frame_count = frames
        if not (type(timestamp_us) is int and -_I64 <= timestamp_us < _I64):
            timestamp_us = _c.checked_integer(timestamp_us, ctypes.c_int64, "timestamp_us")
        block.timestamp_us = timestamp_us
        if out is not None:
            address, capacity = self._destination(out)
            _check("rawfx_audio_chain_process_into",
                   self._process_into(self._handle, self._block_ref, address, capacity, self._written_ref))
            return out[:self._written.value]
        while True:
            scratch = self._scratch
            capacity = scratch.shape[0] if scratch is not None else 0
            result = self._process_into(self._handle, self._block_ref, self._scratch_address, capacity,
                                        self._written_ref)
            if result != _c.E_BUFFER_TOO_SMALL or capacity >= self.max_output_frames(frames):
                break
            # Refused before anything was consumed: grow the scratch and run the chunk again.
            self._scratch = np.empty((max(self.max_output_frames(frames), 2 * capacity), self._out_channels), np.int16)
            self._scratch_address = _address(self._scratch)
        _check("rawfx_audio_chain_process", result)
        if self._scratch is None:  # an empty chunk, before any output
            return np.zeros((0, self._out_channels), np.int16)
        return self._scratch[:self._written.value].copy()

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


def _rgb(value, what):
    """0xRRGGBB, "#rrggbb" or an (r, g, b) tuple as 0xRRGGBB."""
    if isinstance(value, str) and len(value) == 7 and value.startswith("#"):
        try:
            return int(value[1:], 16)
        except ValueError:
            pass
    elif isinstance(value, tuple) and len(value) == 3 and all(type(c) is int and 0 <= c <= 255 for c in value):
        return value[0] << 16 | value[1] << 8 | value[2]
    elif type(value) is int and 0 <= value <= 0xFFFFFF:
        return value
    raise ValueError("%s: %r; expected 0xRRGGBB, '#rrggbb' or (r, g, b)" % (what, value))


def _layout_text(layout):
    """A layout as rawfx_compositor_set_layout takes it: a name with options, or a custom
    layout given as a list of {"id", "x", "y", "width", "height", "z"} dicts."""
    if isinstance(layout, (list, tuple)):
        return _text(json.dumps(list(layout)), "layout")
    return _text(layout, "layout")


class CompositorInput:
    """One stream of a Compositor (rawfx_compositor_input_*). `submit` copies a frame in as
    the input's newest: call it from one thread at a time (the stream's), while another thread
    composes."""

    def __init__(self, compositor, handle, input_id):
        self.id = input_id
        self._compositor = compositor  # the C input holds what it needs; this keeps order of frees
        self._handle = handle
        self._frame = _FrameBinding()
        self._submit = _lib.rawfx_compositor_input_submit

    def submit(self, y, u, v, time_us=None, color_range="limited"):
        """Copies three I420 planes (2-D uint8 arrays, any row stride) in as the newest frame,
        shown from the first output frame at or after `time_us` (the compositor's clock in
        microseconds; None: now)."""
        if self._handle is None:
            raise ValueError("submit: the input was released")
        frame = self._frame.bind(y, u, v, color_range)
        when = -2**63 if time_us is None else _c.checked_integer(time_us, ctypes.c_int64, "time_us")
        _check("rawfx_compositor_input_submit", self._submit(self._handle, frame, when))
        self._frame.release()

    @property
    def active(self):
        return self._active if hasattr(self, "_active") else True

    @active.setter
    def active(self, on):
        """False: the input shows its placeholder from the next output frame (its video is off)."""
        _check("rawfx_compositor_input_set_active", _lib.rawfx_compositor_input_set_active(self._handle, int(bool(on))))
        self._active = bool(on)

    def close(self):
        if self._handle is not None and _lib is not None:
            _lib.rawfx_compositor_input_release(self._handle)
        self._handle = None

    def __del__(self):
        self.close()


class Compositor:
    """Many streams into one picture (rawfx_compositor_*): gallery, speaker, share, single or a
    custom layout of rectangles, on a steady clock (docs/compose.md).

        comp = rawfx.Compositor(1280, 720, fps=30, layout="grid")
        alice = comp.add_input("alice")
        alice.submit(y, u, v)                 # from alice's thread, any size
        y, u, v = comp.compose(frame_index)   # views of the canvas, valid until the next compose
    """

    _handle = None

    def __init__(self, width, height, fps=30, layout="grid", fit="contain", background=0x000000,
                 placeholder=0x282828, timeout=1.0, border=0, color_range="limited"):
        numerator, denominator = (fps, 1) if isinstance(fps, int) else fps
        if fit not in ("contain", "cover"):
            raise ValueError("fit: %r; expected 'contain' or 'cover'" % (fit,))
        if not isinstance(timeout, (int, float)) or not 0.001 <= timeout <= 3600:
            raise ValueError("timeout: %r; expected seconds from 0.001 to 3600" % (timeout,))
        self._layout = _layout_text(layout)
        config = _c.CompositorConfig(ctypes.sizeof(_c.CompositorConfig), width, height, numerator, denominator,
                                     _range_of(color_range), 0 if fit == "contain" else 1, border,
                                     _rgb(background, "background"), _rgb(placeholder, "placeholder"),
                                     int(timeout * 1_000_000), self._layout)
        handle = ctypes.c_void_p()
        _check("rawfx_compositor_create", _lib.rawfx_compositor_create(ctypes.byref(config), ctypes.byref(handle)))
        self._handle = handle
        self._owned = _Owned(handle, _lib.rawfx_compositor_destroy)
        self._output = _c.VideoFrame()
        self._output_ref = ctypes.byref(self._output)
        self._compose = _lib.rawfx_compositor_compose
        self._views = None
        self._inputs = {}

    def add_input(self, input_id, overlay=None, border=None, placeholder_overlay=None):
        """Adds an input (at most 49); drawn from the next output frame (its placeholder until
        its first frame). `overlay`: a VideoChain of in-place filters run on the tile once drawn
        (a name label: "text=text=Alice:anchor=bottom_left"); the compositor keeps it, and its
        set_parameter changes it live. `placeholder_overlay`: the same, before `overlay`, only while
        the tile shows its placeholder (initials on a card). `border`: (pixels, 0xRRGGBB), the
        tile's own border."""
        handle = ctypes.c_void_p()
        for name, chain in (("overlay", overlay), ("placeholder_overlay", placeholder_overlay)):
            if chain is not None and not isinstance(chain, VideoChain):
                raise TypeError("%s: %r; expected a rawfx.VideoChain" % (name, chain))
        has_border, pixels, rgb = 0, 0, 0
        if border is not None:
            try:
                pixels, rgb = border
            except (TypeError, ValueError):
                raise ValueError("border: %r; expected (pixels, 0xRRGGBB)" % (border,)) from None
            has_border, rgb = 1, _rgb(rgb, "border colour")
        options = _c.CompositorInputOptions(ctypes.sizeof(_c.CompositorInputOptions),
                                            None if overlay is None else overlay._handle, has_border, pixels, rgb,
                                            None if placeholder_overlay is None else placeholder_overlay._handle)
        _check("rawfx_compositor_add_input_with_options",
               _lib.rawfx_compositor_add_input_with_options(self._handle, _text(input_id, "input_id"),
                                                            ctypes.byref(options), ctypes.byref(handle)))
        made = self._inputs[input_id] = CompositorInput(self, handle, input_id)
        return made

    def remove_input(self, input_id):
        _check("rawfx_compositor_remove_input", _lib.rawfx_compositor_remove_input(self._handle, _text(input_id, "input_id")))
        removed = self._inputs.pop(input_id, None)
        if removed is not None:
            removed.close()

    def set_layout(self, layout):
        """"grid", "single", "speaker[:filmstrip=bottom:others=4]", "share[:speaker=beside]", or a
        list of {"id", "x", "y", "width", "height", "z"} dicts; from the next output frame."""
        _check("rawfx_compositor_set_layout", _lib.rawfx_compositor_set_layout(self._handle, _layout_text(layout)))

    def set_overlay(self, overlay):
        """A VideoChain of in-place filters run on the whole output after the tiles (a caption
        bar: "text=text=...:anchor=bottom"), from the next output frame; None: none."""
        if overlay is not None and not isinstance(overlay, VideoChain):
            raise TypeError("overlay: %r; expected a rawfx.VideoChain or None" % (overlay,))
        _check("rawfx_compositor_set_overlay",
               _lib.rawfx_compositor_set_overlay(self._handle, None if overlay is None else overlay._handle))

    def set_roles(self, speaker=None, share=None):
        """The active speaker and the share, by input id (None: none)."""
        _check("rawfx_compositor_set_roles", _lib.rawfx_compositor_set_roles(
            self._handle, None if speaker is None else _text(speaker, "speaker"),
            None if share is None else _text(share, "share")))

    def compose(self, frame_index, copy=False):
        """Draws output frame `frame_index` (timestamp frame_index / fps) and returns its planes:
        views of the canvas, valid until the next compose (the same view objects each time), or
        copies with copy=True."""
        index = frame_index if type(frame_index) is int and 0 <= frame_index < 2**63 else \
            _c.checked_integer(frame_index, ctypes.c_int64, "frame_index")
        _check("rawfx_compositor_compose", self._compose(self._handle, index, self._output_ref))
        if self._views is None:
            self._views = _planes_of(self._output, copy=False, owner=self._owned)
        return tuple(view.copy() for view in self._views) if copy else self._views

    @property
    def timestamp_us(self):
        """The timestamp of the last composed frame."""
        return self._output.timestamp_us

    @property
    def scene(self):
        """Where each input went in the last compose: {"version", "layout", "tiles": {id: rect}}."""
        return json.loads(_metrics_json(_lib.rawfx_compositor_scene_json, self._handle))

    def close(self):
        for made in self._inputs.values():
            made.close()
        self._inputs = {}
        self._views = None
        self._handle = None
        self._owned = None


class MixerInput:
    """One stream of a Mixer (rawfx_mixer_input_*): `submit` from one thread at a time (the
    stream's, e.g. the virtual speaker's one-way audio), while another thread mixes."""

    def __init__(self, mixer, handle, input_id):
        self.id = input_id
        self._mixer = mixer
        self._handle = handle
        self._block = _c.AudioFrame()

    def submit(self, samples, sample_rate, channels=1):
        """Appends int16 PCM (a 1-D array of interleaved samples) at any rate and channel count;
        converted to the mixer's rate, mono."""
        if self._handle is None:
            raise ValueError("submit: the input was released")
        pcm = np.ascontiguousarray(samples, dtype=np.int16)
        if pcm.ndim != 1 or pcm.size % channels:
            raise ValueError("submit: samples must be a 1-D int16 array of whole frames of %d channels" % channels)
        b = self._block
        b.struct_size, b.samples, b.frame_count = ctypes.sizeof(_c.AudioFrame), pcm.ctypes.data, pcm.size // channels
        b.sample_rate, b.channels = sample_rate, channels
        _check("rawfx_mixer_input_submit", _lib.rawfx_mixer_input_submit(self._handle, ctypes.byref(b)))

    def set_gain(self, decibels):
        """The input's gain in dB (0: as it comes), from the next block."""
        _check("rawfx_mixer_input_set_gain", _lib.rawfx_mixer_input_set_gain(self._handle, float(decibels)))

    def close(self):
        if self._handle is not None and _lib is not None:
            _lib.rawfx_mixer_input_release(self._handle)
        self._handle = None

    def __del__(self):
        self.close()


class Mixer:
    """The program's sound (rawfx_mixer_*, docs/production.md): N streams of int16 PCM at any
    rate mixed into one mono stream in 10 ms blocks; video frame N leaves with the blocks
    `blocks_for_frame(N, fps)` names.

        mixer = rawfx.Mixer(48000, registry=registry)   # the registry finds `resample`
        alice = mixer.add_input("alice", gain_db=0)
        alice.submit(pcm32k, 32000)                      # the SDK's one-way audio
        for b in rawfx.Mixer.blocks_for_frame(n, 30):
            out = mixer.mix(b)                           # int16 view, valid until the next mix
    """

    _handle = None

    def __init__(self, sample_rate=48000, registry=None, priming_blocks=2):
        handle = ctypes.c_void_p()
        _check("rawfx_mixer_create", _lib.rawfx_mixer_create(None if registry is None else registry._handle,
                                                              sample_rate, priming_blocks, ctypes.byref(handle)))
        self._handle = handle
        self._owned = _Owned(handle, _lib.rawfx_mixer_destroy)
        self.sample_rate = sample_rate
        self._output = _c.AudioFrame()
        self._output.struct_size = ctypes.sizeof(_c.AudioFrame)
        self._inputs = {}

    def add_input(self, input_id, gain_db=0.0):
        handle = ctypes.c_void_p()
        _check("rawfx_mixer_add_input", _lib.rawfx_mixer_add_input(self._handle, _text(input_id, "input_id"),
                                                                    float(gain_db), ctypes.byref(handle)))
        made = self._inputs[input_id] = MixerInput(self, handle, input_id)
        return made

    def remove_input(self, input_id):
        _check("rawfx_mixer_remove_input", _lib.rawfx_mixer_remove_input(self._handle, _text(input_id, "input_id")))
        removed = self._inputs.pop(input_id, None)
        if removed is not None:
            removed.close()

    def mix(self, block_index, copy=False):
        """Block `block_index` (10 ms at block_index × 10 ms) as an int16 array: a view valid
        until the next mix, or a copy."""
        _check("rawfx_mixer_mix", _lib.rawfx_mixer_mix(self._handle, block_index, ctypes.byref(self._output)))
        o = self._output
        view = np.ctypeslib.as_array(ctypes.cast(o.samples, ctypes.POINTER(ctypes.c_int16)), shape=(o.frame_count,))
        return view.copy() if copy else view

    @staticmethod
    def blocks_for_frame(frame_index, fps=30):
        """The block indices that leave with video frame `frame_index`: a range."""
        numerator, denominator = (fps, 1) if isinstance(fps, int) else fps
        first, end = ctypes.c_int64(), ctypes.c_int64()
        _lib.rawfx_mixer_blocks_for_frame(frame_index, numerator, denominator, ctypes.byref(first), ctypes.byref(end))
        return range(first.value, end.value)

    def close(self):
        for made in self._inputs.values():
            made.close()
        self._inputs = {}
        self._handle = None
        self._owned = None


__all__ += ["Mixer", "MixerInput"]
