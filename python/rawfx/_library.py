"""Finding and declaring librawfx (rawfx_embed.h) for ctypes."""
import ctypes
import numbers
import os
import subprocess

# The file names: installed by scripts/install.sh, and as `swift build` leaves it.
INSTALLED_NAME = "librawfx.so"
BUILD_NAME = "libRawFXEmbed.so"
# The binary wheel's own copy (scripts/build-wheel.sh): rawfx/_native/ is laid out like an
# installation prefix, so the library finds the plugins in _native/lib/rawfx/plugins and the
# helper in _native/libexec/rawfx beside itself.
BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native", "lib", "librawfx.so.1")


def candidates():
    """Where librawfx is looked for, in order: $RAWFX_LIBRARY, the library bundled in this
    package (the binary wheel), pkg-config's libdir for rawfx, then a SwiftPM build folder
    (.build/release, .build/debug) above the working directory or above this package (a source
    checkout)."""
    explicit = os.environ.get("RAWFX_LIBRARY")
    if explicit:
        yield explicit
        return
    yield BUNDLED
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "rawfx"], capture_output=True,
                                text=True, check=True).stdout.strip()
        if libdir:
            yield os.path.join(libdir, INSTALLED_NAME)
    except (OSError, subprocess.CalledProcessError):
        pass
    seen = set()
    for start in (os.getcwd(), os.path.dirname(os.path.abspath(__file__))):
        directory = start
        while directory not in seen:
            seen.add(directory)
            for configuration in ("release", "debug"):
                yield os.path.join(directory, ".build", configuration, BUILD_NAME)
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent


def load():
    tried = []
    for path in candidates():
        if os.path.isfile(path):
            return _declare(ctypes.CDLL(path)), path
        tried.append(path)
    raise OSError("librawfx not found; set RAWFX_LIBRARY to its path, install RawFX "
                  "(scripts/install.sh; pkg-config finds it), or build it (swift build). Tried: "
                  + ", ".join(tried[:6]) + (", ..." if len(tried) > 6 else ""))


# ctypes cuts an integer that does not fit its C type (2**32 + 90 becomes 90) without a word.
# Every integer this package hands to C goes through `checked_integer` instead: a call's
# arguments (the argtypes below) and the fields of the structs made from the caller's values.
_RANGES = {ctypes.c_uint32: ("uint32_t", 0, 2**32 - 1), ctypes.c_int32: ("int32_t", -2**31, 2**31 - 1),
           ctypes.c_uint64: ("uint64_t", 0, 2**64 - 1), ctypes.c_int64: ("int64_t", -2**63, 2**63 - 1)}


def checked_integer(value, ctype, what):
    """`value` as an int that fits `ctype`, or TypeError / ValueError naming `what`."""
    name, low, high = _RANGES[ctype]
    if not isinstance(value, numbers.Integral):
        raise TypeError("%s: expected an integer, got %s" % (what, type(value).__name__))
    if not low <= value <= high:
        raise ValueError("%s: %d does not fit %s (%d to %d); refused rather than cut" % (what, value, name, low, high))
    return int(value)


def _checked_argument(ctype):
    """`ctype` as an argtype whose values are range-checked instead of cut."""
    class Checked(ctype):
        @classmethod
        def from_param(cls, value):
            return ctype(checked_integer(value, ctype, "argument"))
    Checked.__name__ = "checked_" + ctype.__name__
    return Checked


_CHECKED_ARGUMENTS = {ctype: _checked_argument(ctype) for ctype in _RANGES}


class CheckedStructure(ctypes.Structure):
    """A struct whose integer fields are range-checked when it is made from values (the ones
    the frame path sets afterwards are checked where they are set)."""

    def __init__(self, *args, **kwargs):
        types = dict(self._fields_)
        for name, value in list(zip(types, args)) + list(kwargs.items()):
            if types.get(name) in _RANGES:
                checked_integer(value, types[name], "%s.%s" % (type(self).__name__, name))
        super().__init__(*args, **kwargs)


class VideoFormat(CheckedStructure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("width", ctypes.c_uint32), ("height", ctypes.c_uint32),
                ("pixel_format", ctypes.c_uint32), ("color_range", ctypes.c_uint32), ("rotation", ctypes.c_uint32)]


class VideoFrame(CheckedStructure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("width", ctypes.c_uint32), ("height", ctypes.c_uint32),
                ("pixel_format", ctypes.c_uint32), ("color_range", ctypes.c_uint32), ("rotation", ctypes.c_uint32),
                ("planes", ctypes.c_void_p * 3), ("strides", ctypes.c_int32 * 3), ("timestamp_us", ctypes.c_int64)]


class AudioFormat(CheckedStructure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("sample_rate", ctypes.c_uint32), ("channels", ctypes.c_uint32)]


class AudioFrame(CheckedStructure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("samples", ctypes.c_void_p), ("frame_count", ctypes.c_uint32),
                ("sample_rate", ctypes.c_uint32), ("channels", ctypes.c_uint32), ("source", ctypes.c_uint32),
                ("user_id", ctypes.c_uint64), ("flags", ctypes.c_uint32), ("timestamp_us", ctypes.c_int64)]


class RegistryOptions(CheckedStructure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("search_path", ctypes.POINTER(ctypes.c_char_p)),
                ("search_path_count", ctypes.c_size_t), ("use_environment", ctypes.c_int32),
                ("skip_default_directory", ctypes.c_int32), ("allow_untrusted", ctypes.c_int32)]


class CompositorConfig(CheckedStructure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("width", ctypes.c_uint32), ("height", ctypes.c_uint32),
                ("rate_numerator", ctypes.c_uint32), ("rate_denominator", ctypes.c_uint32),
                ("color_range", ctypes.c_uint32), ("fit", ctypes.c_uint32), ("border", ctypes.c_uint32),
                ("background_rgb", ctypes.c_uint32), ("placeholder_rgb", ctypes.c_uint32),
                ("input_timeout_us", ctypes.c_int64), ("layout", ctypes.c_char_p)]


class CompositorInputOptions(CheckedStructure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("overlay", ctypes.c_void_p), ("has_border", ctypes.c_int32),
                ("border", ctypes.c_uint32), ("border_rgb", ctypes.c_uint32), ("placeholder_overlay", ctypes.c_void_p)]


class StageMetrics(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("name", ctypes.c_char * 64), ("frames", ctypes.c_uint64),
                ("errors", ctypes.c_uint64), ("drops", ctypes.c_uint64), ("bypassed", ctypes.c_uint64),
                ("p50_ns", ctypes.c_uint64), ("p99_ns", ctypes.c_uint64)]


class HookOptions(CheckedStructure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("async_", ctypes.c_int32), ("async_capacity", ctypes.c_uint32),
                ("retain_in_async", ctypes.c_int32), ("async_workers", ctypes.c_uint32)]


class VideoCapability(CheckedStructure):
    _fields_ = [("width", ctypes.c_uint32), ("height", ctypes.c_uint32), ("frame", ctypes.c_uint32),
                ("data_mode", ctypes.c_int32)]


class LifecycleEvent(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("kind", ctypes.c_int32), ("capability", VideoCapability),
                ("description", ctypes.c_char_p)]


class AudioRawData(CheckedStructure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("buffer", ctypes.c_void_p), ("buffer_len", ctypes.c_uint32),
                ("sample_rate", ctypes.c_uint32), ("channel_num", ctypes.c_uint32), ("timestamp_ms", ctypes.c_uint64),
                ("sdk_object", ctypes.c_void_p), ("can_add_ref", ctypes.c_void_p), ("add_ref", ctypes.c_void_p),
                ("release", ctypes.c_void_p)]


class VideoRawData(CheckedStructure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("width", ctypes.c_uint32), ("height", ctypes.c_uint32),
                ("planes", ctypes.c_void_p * 3), ("strides", ctypes.c_int32 * 3), ("rotation", ctypes.c_uint32),
                ("is_limited", ctypes.c_int32), ("timestamp_ms", ctypes.c_uint64), ("sdk_object", ctypes.c_void_p),
                ("can_add_ref", ctypes.c_void_p), ("add_ref", ctypes.c_void_p), ("release", ctypes.c_void_p)]


PIPE_SUBSCRIBE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
PIPE_UNSUBSCRIBE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)
RECEIVE_SINK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int32, ctypes.POINTER(VideoFrame))
PS_SEND_VIDEO = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                                 ctypes.c_int32, ctypes.c_int32)
LIFECYCLE_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(LifecycleEvent))
SPEAKER_SINK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint64, ctypes.POINTER(AudioFrame))
VIDEO_SEND = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                              ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)
SHARE_SEND = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                              ctypes.c_int32, ctypes.c_int32)
AUDIO_SEND = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int32,
                              ctypes.c_int32)

LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_char_p)

VIDEO_EMIT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(VideoFrame))
AUDIO_EMIT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(AudioFrame))

PIXEL_I420 = 1  # RAWFX_PIXEL_I420
E_BUFFER_TOO_SMALL = 7  # RAWFX_E_BUFFER_TOO_SMALL
AUDIO_SOURCE_FILE = 4


# Called on the frame path with integers the package has checked itself.
_CHECKED_BY_CALLER = {"rawfx_audio_chain_process_into"}

# The rawfx_embed.h minor version whose functions this package calls (1.5: the mixer,
# rawfx_mixer_*, and the compositor's overlays and tile borders; 1.4: the compositor, rawfx_compositor_*).
API_MINOR = 5


def _declare(lib):
    P, c = ctypes.c_void_p, ctypes
    result = c.c_int32
    signatures = {
        "rawfx_embed_version": (c.c_uint32, []),
        "rawfx_last_error": (c.c_char_p, []),
        "rawfx_result_name": (c.c_char_p, [result]),
        "rawfx_set_log_callback": (result, [LOG_CALLBACK, P, c.c_uint32]),
        "rawfx_log_sync": (None, []),
        "rawfx_set_thread_count": (result, [c.c_uint32]),
        "rawfx_thread_count": (c.c_uint32, []),
        "rawfx_registry_open": (result, [c.POINTER(RegistryOptions), c.POINTER(P)]),
        "rawfx_registry_close": (None, [P]),
        "rawfx_registry_search_path_count": (c.c_size_t, [P]),
        "rawfx_registry_search_path_entry": (c.c_char_p, [P, c.c_size_t]),
        "rawfx_registry_failure_count": (c.c_size_t, [P]),
        "rawfx_registry_failure": (c.c_char_p, [P, c.c_size_t]),
        "rawfx_registry_filter_count": (c.c_size_t, [P]),
        "rawfx_registry_filter_id": (c.c_char_p, [P, c.c_size_t]),
        "rawfx_video_chain_create": (result, [P, c.c_char_p, c.POINTER(P)]),
        "rawfx_video_chain_destroy": (None, [P]),
        "rawfx_video_chain_negotiate": (result, [P, c.POINTER(VideoFormat), c.POINTER(VideoFormat)]),
        "rawfx_video_chain_process": (result, [P, c.POINTER(VideoFrame), c.POINTER(VideoFrame)]),
        "rawfx_video_chain_process_into": (result, [P, c.POINTER(VideoFrame), c.POINTER(VideoFrame)]),
        "rawfx_video_chain_latency": (c.c_uint32, [P]),
        "rawfx_video_chain_drain": (result, [P, c.POINTER(VideoFrame), VIDEO_EMIT, P]),
        "rawfx_video_chain_set_parameter": (result, [P, c.c_char_p, c.c_char_p]),
        "rawfx_video_chain_set_bypass": (result, [P, c.c_char_p, c.c_int32]),
        "rawfx_video_chain_replace": (result, [P, P, c.c_char_p, c.POINTER(VideoFormat)]),
        "rawfx_video_chain_swap_count": (c.c_uint64, [P]),
        "rawfx_video_chain_metrics": (result, [P, c.POINTER(StageMetrics), c.c_size_t, c.POINTER(c.c_size_t)]),
        "rawfx_video_chain_metrics_json": (result, [P, c.c_char_p, c.c_size_t, c.POINTER(c.c_size_t)]),
        "rawfx_audio_chain_create": (result, [P, c.c_char_p, c.POINTER(P)]),
        "rawfx_audio_chain_destroy": (None, [P]),
        "rawfx_audio_chain_negotiate": (result, [P, c.POINTER(AudioFormat), c.POINTER(AudioFormat)]),
        "rawfx_audio_chain_process": (result, [P, c.POINTER(AudioFrame), AUDIO_EMIT, P]),
        "rawfx_audio_chain_process_into": (result, [P, c.POINTER(AudioFrame), P, c.c_uint32, c.POINTER(c.c_uint32)]),
        "rawfx_audio_chain_max_output": (c.c_uint32, [P, c.c_uint32]),
        "rawfx_audio_chain_latency": (c.c_uint32, [P]),
        "rawfx_audio_chain_drain": (result, [P, AUDIO_EMIT, P]),
        "rawfx_audio_chain_set_parameter": (result, [P, c.c_char_p, c.c_char_p]),
        "rawfx_audio_chain_set_bypass": (result, [P, c.c_char_p, c.c_int32]),
        "rawfx_audio_chain_metrics": (result, [P, c.POINTER(StageMetrics), c.c_size_t, c.POINTER(c.c_size_t)]),
        "rawfx_audio_chain_metrics_json": (result, [P, c.c_char_p, c.c_size_t, c.POINTER(c.c_size_t)]),
        "rawfx_compositor_create": (result, [c.POINTER(CompositorConfig), c.POINTER(P)]),
        "rawfx_compositor_destroy": (None, [P]),
        "rawfx_compositor_add_input": (result, [P, c.c_char_p, c.POINTER(P)]),
        "rawfx_compositor_add_input_with_options": (result, [P, c.c_char_p, c.POINTER(CompositorInputOptions), c.POINTER(P)]),
        "rawfx_compositor_set_overlay": (result, [P, P]),
        "rawfx_compositor_remove_input": (result, [P, c.c_char_p]),
        "rawfx_compositor_input_submit": (result, [P, c.POINTER(VideoFrame), c.c_int64]),
        "rawfx_compositor_input_set_active": (result, [P, c.c_int32]),
        "rawfx_compositor_input_release": (None, [P]),
        "rawfx_compositor_set_layout": (result, [P, c.c_char_p]),
        "rawfx_compositor_set_roles": (result, [P, c.c_char_p, c.c_char_p]),
        "rawfx_compositor_compose": (result, [P, c.c_int64, c.POINTER(VideoFrame)]),
        "rawfx_compositor_scene_json": (result, [P, c.c_char_p, c.c_size_t, c.POINTER(c.c_size_t)]),
        "rawfx_mixer_create": (result, [P, c.c_uint32, c.c_uint32, c.POINTER(P)]),
        "rawfx_mixer_destroy": (None, [P]),
        "rawfx_mixer_add_input": (result, [P, c.c_char_p, c.c_double, c.POINTER(P)]),
        "rawfx_mixer_remove_input": (result, [P, c.c_char_p]),
        "rawfx_mixer_input_submit": (result, [P, c.POINTER(AudioFrame)]),
        "rawfx_mixer_input_set_gain": (result, [P, c.c_double]),
        "rawfx_mixer_input_release": (None, [P]),
        "rawfx_mixer_mix": (result, [P, c.c_int64, c.POINTER(AudioFrame)]),
        "rawfx_mixer_blocks_for_frame": (None, [c.c_int64, c.c_uint32, c.c_uint32, c.POINTER(c.c_int64), c.POINTER(c.c_int64)]),
        # rawfx_hooks.h
        "rawfx_hook_destroy": (None, [P]),
        "rawfx_hook_kind": (c.c_int32, [P]),
        "rawfx_hook_set_chain": (result, [P, c.c_char_p]),
        "rawfx_hook_set_parameter": (result, [P, c.c_char_p, c.c_char_p]),
        "rawfx_hook_set_bypass": (result, [P, c.c_char_p, c.c_int32]),
        "rawfx_hook_metrics_json": (result, [P, c.c_char_p, c.c_size_t, c.POINTER(c.c_size_t)]),
        "rawfx_hook_set_lifecycle_callback": (result, [P, LIFECYCLE_CALLBACK, P]),
        "rawfx_preprocessor_create": (result, [P, c.c_char_p, c.POINTER(VideoFormat), c.POINTER(P)]),
        "rawfx_preprocessor_process": (result, [P, c.POINTER(VideoFrame)]),
        "rawfx_user_key": (c.c_uint64, [c.c_char_p]),
        "rawfx_speaker_create": (result, [P, c.c_char_p, c.POINTER(HookOptions), SPEAKER_SINK, P, c.POINTER(P)]),
        "rawfx_speaker_receive": (result, [P, c.c_int32, c.c_uint64, c.POINTER(AudioRawData)]),
        "rawfx_speaker_remove_stream": (result, [P, c.c_int32, c.c_uint64]),
        "rawfx_speaker_drain": (result, [P]),
        "rawfx_speaker_latency": (result, [P, c.c_int32, c.c_uint64, c.POINTER(c.c_uint32)]),
        "rawfx_receive_video_create": (result, [P, c.c_char_p, c.POINTER(HookOptions), RECEIVE_SINK, P, c.POINTER(P)]),
        "rawfx_receive_video_subscribe": (result, [P, P, PIPE_SUBSCRIBE, PIPE_UNSUBSCRIBE, c.c_uint64, c.c_int32, c.c_int32,
                                                   c.POINTER(VideoFormat)]),
        "rawfx_receive_video_unsubscribe": (result, [P, c.c_uint64, c.c_int32]),
        "rawfx_receive_video_wait_idle": (result, [P]),
        "rawfx_pipe_frame_received": (result, [P, c.POINTER(VideoRawData)]),
        "rawfx_pipe_status_changed": (result, [P, c.c_int32]),
        "rawfx_production_studio_create": (result, [P, c.c_char_p, c.c_char_p, c.c_uint32, c.c_uint32, c.c_int32, c.c_uint32,
                                                    c.c_int32, c.POINTER(HookOptions), c.POINTER(P)]),
        "rawfx_production_studio_on_start_ps_mode_result": (result, [P, c.c_int32]),
        "rawfx_production_studio_on_start_send": (result, [P, PS_SEND_VIDEO, AUDIO_SEND, P]),
        "rawfx_production_studio_on_stop_send": (result, [P]),
        "rawfx_production_studio_on_ps_user_status_changed": (result, [P, c.c_uint32, c.c_int32]),
        "rawfx_production_studio_push_frame": (result, [P, c.POINTER(VideoFrame)]),
        "rawfx_production_studio_push_audio": (result, [P, c.POINTER(AudioFrame), c.c_int64]),
        "rawfx_production_studio_pump": (result, [P, c.c_int64, c.POINTER(c.c_int64)]),
        "rawfx_production_studio_set_chain": (result, [P, c.c_int32, c.c_char_p]),
        "rawfx_production_studio_set_parameter": (result, [P, c.c_int32, c.c_char_p, c.c_char_p]),
        "rawfx_production_studio_set_bypass": (result, [P, c.c_int32, c.c_char_p, c.c_int32]),
        "rawfx_video_source_create": (result, [P, c.c_char_p, c.POINTER(HookOptions), c.POINTER(P)]),
        "rawfx_video_source_on_initialize": (result, [P, VIDEO_SEND, P, c.POINTER(VideoCapability), c.c_size_t,
                                                      c.POINTER(VideoCapability)]),
        "rawfx_video_source_on_property_change": (result, [P, c.POINTER(VideoCapability), c.c_size_t,
                                                           c.POINTER(VideoCapability)]),
        "rawfx_video_source_on_start_send": (result, [P]),
        "rawfx_video_source_on_stop_send": (result, [P]),
        "rawfx_video_source_on_uninitialized": (result, [P]),
        "rawfx_video_source_push_frame": (result, [P, c.POINTER(VideoFrame)]),
        "rawfx_video_source_capability": (result, [P, c.POINTER(VideoCapability)]),
        "rawfx_share_source_create": (result, [P, c.c_char_p, c.POINTER(HookOptions), c.c_uint32, c.c_uint32, c.POINTER(P)]),
        "rawfx_share_source_on_share_send_started": (result, [P, SHARE_SEND, P]),
        "rawfx_share_source_on_share_send_stopped": (result, [P]),
        "rawfx_share_source_push_frame": (result, [P, c.POINTER(VideoFrame)]),
        "rawfx_virtual_mic_create": (result, [P, c.c_char_p, c.c_uint32, c.c_int32, c.POINTER(P)]),
        "rawfx_virtual_mic_on_initialize": (result, [P, AUDIO_SEND, P]),
        "rawfx_virtual_mic_on_start_send": (result, [P]),
        "rawfx_virtual_mic_on_stop_send": (result, [P]),
        "rawfx_virtual_mic_on_uninitialized": (result, [P]),
        "rawfx_virtual_mic_push_audio": (result, [P, c.POINTER(AudioFrame), c.c_int64]),
        "rawfx_virtual_mic_pump": (result, [P, c.c_int64, c.POINTER(c.c_int64)]),
        "rawfx_virtual_mic_chunks_sent": (c.c_uint64, [P]),
    }
    lib.rawfx_embed_version.restype = c.c_uint32
    version = lib.rawfx_embed_version()
    if version // 1000 != 1 or version % 1000 < API_MINOR:
        raise OSError("librawfx at %s has API version %d.%d; this package needs 1.%d or a later 1.x"
                      % (lib._name, version // 1000, version % 1000, API_MINOR))
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype = restype
        # The frame path's own calls check their integers before the call (a checked argtype
        # costs almost a microsecond per call).
        function.argtypes = argtypes if name in _CHECKED_BY_CALLER else [_CHECKED_ARGUMENTS.get(t, t) for t in argtypes]
    return lib
