"""The fast call paths (issue 31): results into the caller's arrays, reused views, and the
checks that stay. References: numpy's own flips of the planes (mirror is an exact sample
move), the same chain's process() output, and a second chain fed the same input."""
import gc
import weakref

import numpy as np
import pytest

import rawfx
from conftest import WATERMARK
from test_rawfx import padded, picture


@pytest.fixture
def registry():
    return rawfx.Registry()


def canvas_and_tile(top, left, height, width):
    """A 1280x720 I420 canvas of noise and the tile views at (left, top) of `width`x`height`."""
    canvas = picture(1280, 720, seed=11)
    tile = (canvas[0][top:top + height, left:left + width],
            canvas[1][top // 2:(top + height) // 2, left // 2:(left + width) // 2],
            canvas[2][top // 2:(top + height) // 2, left // 2:(left + width) // 2])
    return canvas, tile


def test_process_into_a_tile_view_gives_process_then_a_copy(registry):
    y, u, v = picture(640, 360, seed=1)
    chain = registry.video_chain("scale=width=426:height=240")
    canvas, tile = canvas_and_tile(100, 200, 240, 426)
    before = [plane.copy() for plane in canvas]
    for frame in (picture(640, 360, seed=1), picture(640, 360, seed=2)):  # twice: the reused structs
        chain.process_into(*frame, out=tile)
        expected = registry.video_chain("scale=width=426:height=240").process(*frame)
        for got, reference in zip(tile, expected):
            np.testing.assert_array_equal(got, reference)
    for plane, original, (top, left, height, width) in zip(canvas, before, [(100, 200, 240, 426)] + [(50, 100, 120, 213)] * 2):
        outside = np.ones(plane.shape, bool)
        outside[top:top + height, left:left + width] = False
        np.testing.assert_array_equal(plane[outside], original[outside], "samples outside the tile changed")
    assert [t.strides[0] for t in tile] == [1280, 640, 640], "the destination keeps the canvas's strides"
    del y, u, v


def test_process_into_padded_destination_strides(registry):
    y, u, v = picture(48, 30, seed=3)
    out = [padded(np.zeros_like(p), extra=7) for p in (y, u, v)]
    registry.video_chain("mirror").process_into(y, u, v, out=out)
    for got, plane in zip(out, (y, u, v)):
        np.testing.assert_array_equal(got, np.fliplr(plane))
    assert out[0].base[0, 48:].tolist() == [0xEE] * 7, "the padding after a row was written"


def test_process_into_refuses_bad_destinations_before_consuming_the_frame(registry):
    frame = picture(640, 360, seed=4)
    chain = registry.video_chain("scale=width=320:height=180")
    chain.negotiate(640, 360)
    small = picture(318, 180)
    with pytest.raises(rawfx.RawFXError) as error:
        chain.process_into(*frame, out=small)
    assert error.value.name == "RAWFX_E_STATE"
    assert "the chain's output is 320x180; destination is 318x180" in error.value.message
    assert "nothing was processed" in error.value.message
    assert chain.metrics()[0]["frames"] == 0

    read_only = picture(320, 180)
    read_only[1].flags.writeable = False
    with pytest.raises(ValueError, match=r"out\[1\]: the array is read-only"):
        chain.process_into(*frame, out=read_only)
    with pytest.raises(ValueError, match="out: expected three planes"):
        chain.process_into(*frame, out=read_only[0])
    with pytest.raises(ValueError, match=r"out\[2\]: shape \(90, 80\); expected \(90, 160\)"):
        chain.process_into(*frame, out=(read_only[0], read_only[0][:90, :160], read_only[0][:90, :80]))
    assert chain.metrics()[0]["frames"] == 0


def test_process_into_refuses_a_destination_that_partly_overlaps_the_input(registry):
    y, u, v = picture(64, 32, seed=5)
    chain = registry.video_chain("mirror")
    wide = np.zeros((40, 64), np.uint8)
    wide[:32] = y
    with pytest.raises(rawfx.RawFXError) as error:
        chain.process_into(wide[:32], u, v, out=(wide[8:40], u.copy(), v.copy()))
    assert error.value.name == "RAWFX_E_INVALID_ARGUMENT"
    assert "destination plane 0 overlaps input plane 0" in error.value.message
    # The input itself is a destination (the pre-processor's frame): in place.
    planes = [p.copy() for p in (y, u, v)]
    chain.process_into(*planes, out=planes)
    for got, plane in zip(planes, (y, u, v)):
        np.testing.assert_array_equal(got, np.fliplr(plane))


def test_views_are_reused_and_keep_the_chain_alive_after_close(registry):
    chain = registry.video_chain("scale=width=320:height=180")
    first = chain.process(*picture(640, 360, seed=6), copy=False)
    second = chain.process(*picture(640, 360, seed=7), copy=False)
    assert all(a is b for a, b in zip(first, second)), "the views of one buffer are made once"
    expected = registry.video_chain("scale=width=320:height=180").process(*picture(640, 360, seed=7))
    owned = weakref.ref(chain._owned)
    chain.close()
    gc.collect()
    assert owned() is not None, "the views still need the chain's buffers"
    for got, reference in zip(second, expected):
        np.testing.assert_array_equal(got, reference)
    with pytest.raises(rawfx.RawFXError, match="chain is NULL"):
        chain.process(*picture(640, 360), copy=False)
    del first, second, got
    gc.collect()
    assert owned() is None, "the chain is freed with its last view"


def test_in_place_chain_returns_the_callers_arrays(registry):
    chain_text = "watermark=image=%s:x=8:y=4:opacity=0.6" % WATERMARK
    y, u, v = picture(640, 360, seed=8)
    copies = [p.copy() for p in (y, u, v)]
    out = registry.video_chain(chain_text).process(y, u, v, copy=False)
    assert out[0] is y and out[1] is u and out[2] is v, "the watermark works in place: the result is the input"
    expected = registry.video_chain(chain_text).process(*copies)
    for got, reference in zip(out, expected):
        np.testing.assert_array_equal(got, reference)
    assert not np.array_equal(y, picture(640, 360, seed=8)[0]), "the watermark changed the picture"


def test_audio_process_into_the_callers_array(registry):
    rng = np.random.default_rng(2)
    pcm = (rng.standard_normal(9600) * 3000).astype(np.int16)
    for text, rate in (("denoise=level=-30", 48000), ("resample=rate=16000", 16000)):
        plain, into = registry.audio_chain(text), registry.audio_chain(text)
        assert plain.negotiate(48000, 1) == into.negotiate(48000, 1) == (rate, 1)
        out = np.full((into.max_output_frames(2000), 1), 7, np.int16)
        got, expected, start = [], [], 0
        for size in (333, 480, 1, 1000, 479, 1900, 7):
            chunk = pcm[start:start + size]
            start += size
            expected.append(plain.process(chunk))
            result = into.process(chunk, out=out)
            assert result.base is out or result is out or np.shares_memory(result, out)
            got.append(result.copy())
        np.testing.assert_array_equal(np.concatenate(got), np.concatenate(expected))
        assert sum(len(g) for g in got) > 1000


def test_audio_out_too_small_is_refused_and_loses_nothing(registry):
    rng = np.random.default_rng(3)
    pcm = (rng.standard_normal(4800) * 3000).astype(np.int16)
    reference, chain = registry.audio_chain("denoise=level=-30"), registry.audio_chain("denoise=level=-30")
    reference.negotiate(48000, 1)
    chain.negotiate(48000, 1)
    expected = np.concatenate([reference.process(pcm[i:i + 960]) for i in range(0, 4800, 960)])
    got = []
    for i in range(0, 4800, 960):
        need = chain.max_output_frames(960)
        with pytest.raises(rawfx.RawFXError) as error:
            chain.process(pcm[i:i + 960], out=np.empty(need - 1, np.int16))
        assert error.value.name == "RAWFX_E_BUFFER_TOO_SMALL"
        assert "destination has room for %d frames; a chunk of 960 frames can produce up to %d" % (need - 1, need) \
            in error.value.message
        got.append(chain.process(pcm[i:i + 960], out=np.empty(need, np.int16)).copy())
    np.testing.assert_array_equal(np.concatenate(got), expected[:, 0])


def test_audio_out_checks(registry):
    chain = registry.audio_chain("gain=db=0")
    chain.negotiate(16000, 2)
    pcm = np.zeros((160, 2), np.int16)
    with pytest.raises(ValueError, match=r"out: shape \(160,\); expected \(frames, 2\)"):
        chain.process(pcm, out=np.zeros(160, np.int16))
    with pytest.raises(ValueError, match="out: expected a numpy array of int16, got float32"):
        chain.process(pcm, out=np.zeros((160, 2), np.float32))
    read_only = np.zeros((160, 2), np.int16)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="out: the array is read-only"):
        chain.process(pcm, out=read_only)
    with pytest.raises(ValueError, match="out: not contiguous"):
        chain.process(pcm, out=np.zeros((160, 4), np.int16)[:, :2])
    assert chain.process(np.zeros((0, 2), np.int16)).shape == (0, 2)


# --- What ctypes would cut or convert is refused (issue 25) ----------------------------------

def test_integers_that_do_not_fit_their_c_type_are_refused(registry):
    chain = registry.video_chain("mirror")
    with pytest.raises(ValueError, match=r"VideoFormat.width: 4294967936 does not fit uint32_t"):
        chain.negotiate(2**32 + 640, 360)
    y, u, v = picture(32, 16)
    with pytest.raises(ValueError, match=r"rotation: 4294967386 does not fit uint32_t"):
        chain.process(y, u, v, rotation=2**32 + 90)
    with pytest.raises(ValueError, match=r"timestamp_us: 18446744073709551616 does not fit int64_t"):
        chain.process(y, u, v, timestamp_us=2**64)
    with pytest.raises(TypeError, match=r"timestamp_us: expected an integer, got float"):
        chain.process(y, u, v, timestamp_us=1.5)
    with pytest.raises(ValueError, match=r"color_range: 'tv'; expected 'limited' or 'full'"):
        chain.process(y, u, v, color_range="tv")
    audio = registry.audio_chain("gain=db=0")
    with pytest.raises(ValueError, match=r"AudioFormat.sample_rate: 4294983296 does not fit uint32_t"):
        audio.negotiate(2**32 + 16000, 1)
    with pytest.raises(ValueError, match=r"frames: -1 does not fit uint32_t"):
        audio.max_output_frames(-1)
    assert chain.metrics()[0]["frames"] == 0, "nothing reached the chain"


def test_chain_text_must_be_text_without_nul(registry):
    with pytest.raises(TypeError, match=r"chain: expected a str, got int"):
        registry.video_chain(123)
    with pytest.raises(ValueError, match=r"chain: a NUL character at offset 6; C strings end there"):
        registry.video_chain("mirror\0,scale=width=2")
    chain = registry.video_chain("mirror")
    with pytest.raises(ValueError, match=r"value: a NUL character at offset 4"):
        chain.set_parameter("mirror.vertical", "true\0false")
    with pytest.raises(TypeError, match=r"stage: expected a str, got NoneType"):
        chain.set_bypass(None)


def test_thread_counts_outside_1_to_64_are_refused_and_change_nothing():
    before = rawfx.thread_count()
    for count in (0, 65, 1000):
        with pytest.raises(ValueError, match="count %d is not a thread count: expected 1 \\(no pool\\) to 64" % count):
            rawfx.set_thread_count(count)
    assert rawfx.thread_count() == before
