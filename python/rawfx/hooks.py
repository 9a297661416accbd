"""The SDK hooks from Python (rawfx_hooks.h): forward your SDK binding's callbacks to them.

    camera = rawfx.VideoSource(registry, "watermark=image=logo.png")
    # the SDK's IZoomVideoSDKVideoSource callbacks:
    camera.on_initialize(send, supported=[(1280, 720, 30)], suggested=(1280, 720, 30))
    camera.on_start_send()
    camera.push_frame(y, u, v)            # from your capture loop; sent to `send` packed

    speaker = rawfx.VirtualSpeaker(registry, "denoise", sink=lambda stream, user, pcm: ...)
    speaker.receive(rawfx.MIXED, pcm, 32000)  # from onVirtualSpeakerMixedAudioReceived

Each class is the engine's own hook (RawFXSDK) behind the C API; see python/examples/bot.py
for the shape of a bot's loop. Callbacks (sink, send, lifecycle listener) run on the SDK's
thread that called in, or on the hook's worker (async speaker, worker-paced mic): keep them
short. The SDK's own objects stay in your binding; the hooks get plain data: numpy arrays,
bytes, callables.
"""
import ctypes
import json

import numpy as np

from . import _c, _check, _frame, _FrameBinding, _lib, _metrics_json, _text

MIXED, ONE_WAY, SHARED = 0, 1, 2  # RAWFX_STREAM_*
STREAM_NAMES = {MIXED: "mixed", ONE_WAY: "one_way", SHARED: "shared"}
PACING = {"worker": 0, "caller": 1, "immediate": 2}  # RAWFX_PACING_*
EVENT_NAMES = {1: "video_source_initialized", 2: "video_source_capability_changed", 3: "video_source_started",
               4: "video_source_stopped", 5: "video_source_uninitialized", 6: "mic_initialized", 7: "mic_started",
               8: "mic_stopped", 9: "mic_uninitialized", 10: "ps_mode_accepted", 11: "ps_mode_refused",
               12: "ps_started", 13: "ps_stopped", 14: "share_started", 15: "share_stopped"}  # RAWFX_EVENT_*
RAWFX_E_STATE = 6


def user_key(user_id):
    """The 64-bit key of a Video SDK user id string (its number, else a hash), as the speaker's user_id."""
    return _lib.rawfx_user_key(_text(user_id))


def _options(async_, capacity=0, retain=False, workers=0):
    return _c.HookOptions(ctypes.sizeof(_c.HookOptions), int(bool(async_)), capacity, int(bool(retain)), workers)


class Hook:
    """What every hook has: run-time control from any thread, metrics, close()."""

    _handle = None  # set once the C object exists: close() is safe after a failed __init__
    _kind = "hook"

    def _create(self, call, function, *arguments):
        handle = ctypes.c_void_p()
        _check(call, function(*arguments, ctypes.byref(handle)))
        self._handle = handle

    def _call(self, name, *arguments):
        _check(name, getattr(_lib, name)(self._handle, *arguments))

    _binding = None  # the frame struct a frame call reuses

    def _frame_ref(self, y, u, v, color_range, rotation, writable=False):
        """The hook's one rawfx_video_frame, pointed at these planes once they are checked."""
        if self._binding is None:
            self._binding = _FrameBinding()
        return self._binding.bind(y, u, v, color_range, rotation, 0, writable)

    def close(self):
        """Stops the hook (a speaker flushes its streams to the sink) and frees it."""
        if self._handle:
            _lib.rawfx_hook_destroy(self._handle)
            self._handle = None

    def __del__(self):
        if _lib is not None:
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    def set_chain(self, text):
        """Replaces the chain between two frames (built and negotiated here; a refusal raises)."""
        self._call("rawfx_hook_set_chain", _text(text))

    def set_parameter(self, address, value):
        text = str(value).lower() if isinstance(value, bool) else str(value)
        self._call("rawfx_hook_set_parameter", _text(address), _text(text))

    def set_bypass(self, stage, bypassed=True):
        self._call("rawfx_hook_set_bypass", _text(stage), int(bool(bypassed)))

    def metrics(self):
        """{"hook": {...}, "refused", "overflows", "send_rejected", "filters": [...]}"""
        return json.loads(_metrics_json(_lib.rawfx_hook_metrics_json, self._handle))


class _Source(Hook):
    """Sources report the SDK's start and stop to a listener(event, description, capability)."""

    _listener = None

    def on_lifecycle(self, listener):
        """listener(name, description, (width, height, fps) or None), after the hook acted;
        None removes it."""
        if listener is None:
            self._listener = None
            self._call("rawfx_hook_set_lifecycle_callback", ctypes.cast(None, _c.LIFECYCLE_CALLBACK), None)
            return

        def deliver(_, event):
            e = event.contents
            capability = (e.capability.width, e.capability.height, e.capability.frame) if e.capability.width else None
            listener(EVENT_NAMES.get(e.kind, str(e.kind)), e.description.decode(), capability)
        self._listener = _c.LIFECYCLE_CALLBACK(deliver)  # kept: C holds the pointer
        self._call("rawfx_hook_set_lifecycle_callback", self._listener, None)


class PreProcessor(Hook):
    """onPreProcessRawData: edits each captured frame in place (the chain cannot resize)."""

    def __init__(self, registry, chain, frame_size=None, color_range="limited"):
        fmt = None
        if frame_size is not None:
            fmt = ctypes.byref(_c.VideoFormat(ctypes.sizeof(_c.VideoFormat), frame_size[0], frame_size[1], _c.PIXEL_I420,
                                             {"limited": 0, "full": 1}[color_range], 0))
        self._create("rawfx_preprocessor_create", _lib.rawfx_preprocessor_create, registry._handle, _text(chain), fmt)

    def process(self, y, u, v, color_range="limited", rotation=0):
        """Runs the chain on the SDK's planes (writable 2-D uint8 arrays, any row stride) in place."""
        _check("rawfx_preprocessor_process",
               _lib.rawfx_preprocessor_process(self._handle, self._frame_ref(y, u, v, color_range, rotation, writable=True)))


class VirtualSpeaker(Hook):
    """The virtual speaker: each stream (the mix, each user, share audio) through its own chain.
    sink(stream, user_id, pcm) gets each processed block as int16 (frames, channels), a copy."""

    def __init__(self, registry, chain, sink, async_=False, capacity_ms=0):
        def deliver(_, stream, user, block):
            b = block.contents
            count = b.frame_count * b.channels
            samples = np.ctypeslib.as_array(ctypes.cast(b.samples, ctypes.POINTER(ctypes.c_int16)), (count,)) if count \
                else np.zeros(0, dtype=np.int16)
            sink(stream, user, samples.reshape(b.frame_count, b.channels).copy())
        self._sink = _c.SPEAKER_SINK(deliver)  # kept: C holds the pointer
        self._create("rawfx_speaker_create", _lib.rawfx_speaker_create, registry._handle, _text(chain),
                     ctypes.byref(_options(async_, capacity_ms)), self._sink, None)

    def receive(self, stream, pcm, sample_rate, user_id=0, timestamp_ms=0):
        """One callback's audio (AudioRawData's buffer): int16 array (frames,) or (frames,
        channels), or the raw bytes with channels=1. stream: MIXED, ONE_WAY (user_id), SHARED."""
        if isinstance(pcm, (bytes, bytearray, memoryview)):
            pcm = np.frombuffer(pcm, dtype=np.int16)
        pcm = np.ascontiguousarray(pcm)
        if pcm.dtype != np.int16:
            raise ValueError("pcm: dtype %s; expected int16" % pcm.dtype)
        channels = 1 if pcm.ndim == 1 else pcm.shape[1]
        data = _c.AudioRawData(ctypes.sizeof(_c.AudioRawData), pcm.ctypes.data, pcm.nbytes, sample_rate, channels,
                               timestamp_ms, None, None, None, None)
        self._call("rawfx_speaker_receive", stream, user_id, ctypes.byref(data))

    def remove_stream(self, stream, user_id=0):
        """A user left (onUserLeave) or a stream ended: every sample still in its chain (the
        latency tail included) goes to the sink, then the chain is released."""
        self._call("rawfx_speaker_remove_stream", stream, user_id)

    def drain(self):
        """Async: waits until the worker has processed everything received so far."""
        self._call("rawfx_speaker_drain")

    def latency(self, stream, user_id=0):
        """Frames by which the stream's output lags its input (a denoiser: 10 ms)."""
        frames = ctypes.c_uint32()
        self._call("rawfx_speaker_latency", stream, user_id, ctypes.byref(frames))
        return frames.value


class PipeDelegate:
    """One subscribed pipe's delegate (IZoomVideoSDKRawDataPipeDelegate): forward the pipe's
    onRawDataFrameReceived and onRawDataStatusChanged here, until unsubscribe."""

    def __init__(self, hook):
        self._hook = hook
        self._token = None

    def frame_received(self, y, u, v, color_range="limited", rotation=0, timestamp_ms=0):
        """One received I420 frame (three 2-D uint8 arrays, any row stride)."""
        f = _frame(y, u, v, color_range, rotation, 0)
        raw = _c.VideoRawData(ctypes.sizeof(_c.VideoRawData), f.width, f.height, f.planes, f.strides, rotation,
                              int(color_range == "limited"), timestamp_ms, None, None, None, None)
        _check("rawfx_pipe_frame_received", _lib.rawfx_pipe_frame_received(self._token, ctypes.byref(raw)))

    def status_changed(self, on):
        _check("rawfx_pipe_status_changed", _lib.rawfx_pipe_status_changed(self._token, 0 if on else 1))


class ReceiveVideo(Hook):
    """Received video per user: each subscribed (user, pipe) runs its own chain;
    sink(user_id, pipe_kind, y, u, v) gets each processed frame (copies). Async: `capacity`
    frames queued per stream (oldest dropped), every stream served by one pool of `workers`
    threads (0: one per core), each stream on one thread at a time."""

    VIDEO, SHARE = 0, 1  # RAWFX_PIPE_*

    def __init__(self, registry, chain, sink, async_=False, capacity=0, workers=0):
        from . import _planes_of

        def deliver(_, user, kind, frame):
            sink(user, kind, *_planes_of(frame.contents))
        self._sink = _c.RECEIVE_SINK(deliver)
        self._pipes = {}
        self._create("rawfx_receive_video_create", _lib.rawfx_receive_video_create, registry._handle, _text(chain),
                     ctypes.byref(_options(async_, capacity, workers=workers)), self._sink, None)

    def subscribe(self, subscribe, unsubscribe, user_id, kind=0, resolution=2):
        """Subscribes a pipe: subscribe(delegate, resolution) -> SDK error code is your pipe's
        subscribe (forward the SDK's frames to `delegate`), unsubscribe(delegate) its unSubscribe.
        resolution: 0 90p ... 4 1080p. Returns the PipeDelegate."""
        delegate = PipeDelegate(self)

        def on_subscribe(_, token, res):
            delegate._token = token
            return int(subscribe(delegate, res) or 0)
        callbacks = (_c.PIPE_SUBSCRIBE(on_subscribe), _c.PIPE_UNSUBSCRIBE(lambda _, token: int(unsubscribe(delegate) or 0)))
        self._pipes[(user_id, kind)] = callbacks  # kept: C holds them until unsubscribe
        self._call("rawfx_receive_video_subscribe", None, callbacks[0], callbacks[1], user_id, kind, resolution, None)
        return delegate

    def unsubscribe(self, user_id, kind=0):
        self._call("rawfx_receive_video_unsubscribe", user_id, kind)
        self._pipes.pop((user_id, kind), None)

    def wait_idle(self):
        self._call("rawfx_receive_video_wait_idle")


def _pushed(call, result):
    """A push's result: True, False when refused (the SDK is not sending), or an exception."""
    if result == RAWFX_E_STATE:
        return False
    _check(call, result)
    return True


def _audio_block(pcm, sample_rate):
    pcm = np.ascontiguousarray(pcm)
    if pcm.dtype != np.int16:
        raise ValueError("pcm: dtype %s; expected int16" % pcm.dtype)
    channels = 1 if pcm.ndim == 1 else pcm.shape[1]
    return pcm, _c.AudioFrame(ctypes.sizeof(_c.AudioFrame), pcm.ctypes.data, pcm.shape[0], sample_rate, channels, 0, 0, 0, 0)


def _stamp(timestamp_us):
    return -(2 ** 63) if timestamp_us is None else timestamp_us  # RAWFX_TIMESTAMP_CONTINUE


def _capability(c):
    width, height = c[0], c[1]
    fps = c[2] if len(c) > 2 else 30
    return _c.VideoCapability(width, height, fps, c[3] if len(c) > 3 else 0)


class VideoSource(_Source):
    """A virtual camera (IZoomVideoSDKVideoSource): pushed frames run through the chain, are
    fitted to the suggested capability and go, packed I420, to send(frame, width, height,
    rotation, format) -> error code (0), where frame is a uint8 array valid during the call."""

    def __init__(self, registry, chain, async_=False, capacity=0):
        self._create("rawfx_video_source_create", _lib.rawfx_video_source_create, registry._handle, _text(chain),
                     ctypes.byref(_options(async_, capacity)))

    @staticmethod
    def _capabilities(supported, suggested):
        array = (_c.VideoCapability * max(len(supported), 1))(*[_capability(c) for c in supported])
        return array, len(supported), ctypes.byref(_capability(suggested))

    def on_initialize(self, send, supported, suggested):
        """supported: [(width, height, fps), ...]; suggested: (width, height, fps)."""
        def deliver(_, buffer, width, height, length, rotation, fmt):
            frame = np.ctypeslib.as_array(ctypes.cast(buffer, ctypes.POINTER(ctypes.c_uint8)), (length,))
            return int(send(frame, width, height, rotation, fmt) or 0)
        self._send = _c.VIDEO_SEND(deliver)  # kept until the next on_initialize
        self._call("rawfx_video_source_on_initialize", self._send, None, *self._capabilities(supported, suggested))

    def on_property_change(self, supported, suggested):
        self._call("rawfx_video_source_on_property_change", *self._capabilities(supported, suggested))

    def on_start_send(self):
        self._call("rawfx_video_source_on_start_send")

    def on_stop_send(self):
        self._call("rawfx_video_source_on_stop_send")

    def on_uninitialized(self):
        self._call("rawfx_video_source_on_uninitialized")

    def push_frame(self, y, u, v, color_range="limited", rotation=0):
        """Offers one frame; True when sent (or queued), False when refused (the SDK is not
        sending: before on_start_send or after on_stop_send). Raises when a filter fails."""
        return _pushed("rawfx_video_source_push_frame",
                       _lib.rawfx_video_source_push_frame(self._handle, self._frame_ref(y, u, v, color_range, rotation)))

    @property
    def capability(self):
        c = _c.VideoCapability()
        self._call("rawfx_video_source_capability", ctypes.byref(c))
        return c.width, c.height, c.frame


class ShareSource(_Source):
    """Raw frames shared as a screen (IZoomVideoSDKShareSource; the Meeting SDK's
    IZoomSDKShareSource): pushed frames run through the chain and go, packed I420 at the
    chain's output size (even sides) or fitted to `output_size`, to send(frame, width, height,
    format) -> error code (0), only between on_share_send_started and on_share_send_stopped."""

    def __init__(self, registry, chain, async_=False, capacity=0, output_size=None):
        width, height = output_size or (0, 0)
        self._create("rawfx_share_source_create", _lib.rawfx_share_source_create, registry._handle, _text(chain),
                     ctypes.byref(_options(async_, capacity)), width, height)

    def on_share_send_started(self, send):
        """onShareSendStarted(sender) (Meeting SDK: onStartSend); send None: the SDK gave no sender."""
        if send is None:
            self._send = None
            self._call("rawfx_share_source_on_share_send_started", ctypes.cast(None, _c.SHARE_SEND), None)
            return

        def deliver(_, buffer, width, height, length, fmt):
            frame = np.ctypeslib.as_array(ctypes.cast(buffer, ctypes.POINTER(ctypes.c_uint8)), (length,))
            return int(send(frame, width, height, fmt) or 0)
        self._send = _c.SHARE_SEND(deliver)  # kept until the next start
        self._call("rawfx_share_source_on_share_send_started", self._send, None)

    def on_share_send_stopped(self):
        """onShareSendStopped (Meeting SDK: onStopSend): nothing is sent once it returns."""
        self._call("rawfx_share_source_on_share_send_stopped")

    def push_frame(self, y, u, v, color_range="limited", rotation=0):
        """Offers one frame; True when sent (or queued), False when refused (not sharing)."""
        return _pushed("rawfx_share_source_push_frame",
                       _lib.rawfx_share_source_push_frame(self._handle, self._frame_ref(y, u, v, color_range, rotation)))


class VirtualMic(_Source):
    """A virtual microphone (IZoomVideoSDKVirtualAudioMic): pushed PCM runs through the chain,
    becomes mono int16 at target_rate and goes in 10 ms chunks to send(chunk, sample_rate,
    channel) -> error code (0). pacing: "worker" (the hook's clock), "caller" (pump), "immediate"."""

    def __init__(self, registry, chain, target_rate=48000, pacing="worker"):
        self._create("rawfx_virtual_mic_create", _lib.rawfx_virtual_mic_create, registry._handle, _text(chain),
                     target_rate, PACING[pacing])

    def on_initialize(self, send):
        def deliver(_, data, length, rate, channel):
            chunk = np.ctypeslib.as_array(ctypes.cast(data, ctypes.POINTER(ctypes.c_int16)), (length // 2,))
            return int(send(chunk, rate, channel) or 0)
        self._send = _c.AUDIO_SEND(deliver)
        self._call("rawfx_virtual_mic_on_initialize", self._send, None)

    def on_start_send(self):
        self._call("rawfx_virtual_mic_on_start_send")

    def on_stop_send(self):
        self._call("rawfx_virtual_mic_on_stop_send")

    def on_uninitialized(self):
        self._call("rawfx_virtual_mic_on_uninitialized")

    def push_audio(self, pcm, sample_rate, timestamp_us=None):
        """int16 (frames,) or (frames, channels); True when accepted, False when refused."""
        pcm, block = _audio_block(pcm, sample_rate)
        return _pushed("rawfx_virtual_mic_push_audio",
                       _lib.rawfx_virtual_mic_push_audio(self._handle, ctypes.byref(block), _stamp(timestamp_us)))

    def pump(self, now_us):
        """pacing="caller": sends what is due at now_us; returns when the next is due, or None."""
        due = ctypes.c_int64()
        self._call("rawfx_virtual_mic_pump", now_us, ctypes.byref(due))
        return None if due.value < 0 else due.value

    @property
    def chunks_sent(self):
        return _lib.rawfx_virtual_mic_chunks_sent(self._handle)


class ProductionStudio(_Source):
    """Production studio mode (IMeetingProductionStudioCtrlEvent): video fitted to exactly
    capability=(width, height, "limited"|"full"), audio as paced 10 ms mono chunks at
    audio_rate, both to the PS sender: send_video(frame, width, height, fmt) and
    send_audio(chunk, sample_rate, channel), each -> error code (0). Its two chains are
    controlled with media="video" or "audio"."""

    MEDIA = {"video": 1, "audio": 2}  # rawfx.h RAWFX_MEDIA_*

    def __init__(self, registry, video_chain, audio_chain, capability, audio_rate=48000, pacing="worker"):
        width, height, color_range = capability
        self._create("rawfx_production_studio_create", _lib.rawfx_production_studio_create, registry._handle,
                     _text(video_chain), _text(audio_chain), width, height, {"limited": 0, "full": 1}[color_range],
                     audio_rate, PACING[pacing], None)

    def on_start_ps_mode_result(self, success):
        self._call("rawfx_production_studio_on_start_ps_mode_result", int(bool(success)))

    def on_start_send(self, send_video, send_audio):
        """The SDK's onStartSend with its sender (both None: the SDK gave none)."""
        if send_video is None:
            self._call("rawfx_production_studio_on_start_send", ctypes.cast(None, _c.PS_SEND_VIDEO),
                       ctypes.cast(None, _c.AUDIO_SEND), None)
            return

        def video(_, buffer, width, height, length, fmt):
            frame = np.ctypeslib.as_array(ctypes.cast(buffer, ctypes.POINTER(ctypes.c_uint8)), (length,))
            return int(send_video(frame, width, height, fmt) or 0)

        def audio(_, data, length, rate, channel):
            chunk = np.ctypeslib.as_array(ctypes.cast(data, ctypes.POINTER(ctypes.c_int16)), (length // 2,))
            return int(send_audio(chunk, rate, channel) or 0)
        self._senders = (_c.PS_SEND_VIDEO(video), _c.AUDIO_SEND(audio))  # kept: C holds them
        self._call("rawfx_production_studio_on_start_send", self._senders[0], self._senders[1], None)

    def on_stop_send(self):
        self._call("rawfx_production_studio_on_stop_send")

    def on_ps_user_status_changed(self, user_id, start):
        self._call("rawfx_production_studio_on_ps_user_status_changed", user_id, int(bool(start)))

    def push_frame(self, y, u, v, color_range="limited", rotation=0):
        return _pushed("rawfx_production_studio_push_frame", _lib.rawfx_production_studio_push_frame(
            self._handle, self._frame_ref(y, u, v, color_range, rotation)))

    def push_audio(self, pcm, sample_rate, timestamp_us=None):
        pcm, block = _audio_block(pcm, sample_rate)
        return _pushed("rawfx_production_studio_push_audio",
                       _lib.rawfx_production_studio_push_audio(self._handle, ctypes.byref(block), _stamp(timestamp_us)))

    def pump(self, now_us):
        due = ctypes.c_int64()
        self._call("rawfx_production_studio_pump", now_us, ctypes.byref(due))
        return None if due.value < 0 else due.value

    def set_chain(self, text, media="video"):
        self._call("rawfx_production_studio_set_chain", self.MEDIA[media], _text(text))

    def set_parameter(self, address, value, media="video"):
        text = str(value).lower() if isinstance(value, bool) else str(value)
        self._call("rawfx_production_studio_set_parameter", self.MEDIA[media], _text(address), _text(text))

    def set_bypass(self, stage, bypassed=True, media="video"):
        self._call("rawfx_production_studio_set_bypass", self.MEDIA[media], _text(stage), int(bool(bypassed)))
