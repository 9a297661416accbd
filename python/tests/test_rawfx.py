"""The rawfx package against independent references: `rawfx run`'s files, and numpy's own
flips and rotations of the planes (mirror and rotate are exact sample moves)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import rawfx
from conftest import EXAMPLE, WATERMARK

VIDEO_CHAIN = "watermark=image=%s:x=200:y=120:opacity=0.6,scale=width=320:height=180,rotate=angle=90" % WATERMARK


@pytest.fixture
def registry():
    return rawfx.Registry()


def picture(width, height, seed=0):
    rng = np.random.default_rng(seed)
    cw, ch = (width + 1) // 2, (height + 1) // 2
    return (rng.integers(16, 236, (height, width), dtype=np.uint8),
            rng.integers(16, 241, (ch, cw), dtype=np.uint8), rng.integers(16, 241, (ch, cw), dtype=np.uint8))


def padded(plane, extra=13):
    """The same samples in rows `extra` bytes wider than the plane: a row stride > width."""
    wide = np.full((plane.shape[0], plane.shape[1] + extra), 0xEE, dtype=np.uint8)
    wide[:, :plane.shape[1]] = plane
    return wide[:, :plane.shape[1]]


def run_example(*arguments):
    env = dict(os.environ, RAWFX_LIBRARY=rawfx.library_path)
    env.pop("RAWFX_PLUGIN_PATH", None)
    return subprocess.run([sys.executable, EXAMPLE] + list(arguments), env=env, capture_output=True, text=True)


def read(path):
    with open(path, "rb") as f:
        return f.read()


# --- The done-when: the example script writes what rawfx run writes ---------------------------

def test_example_video_matches_rawfx_run(media, rawfx_command, tmp_path):
    y4m, _ = media
    subprocess.run([rawfx_command, "run", "--vf", VIDEO_CHAIN, y4m, str(tmp_path / "ref.y4m")], check=True)
    outcome = run_example("--vf", VIDEO_CHAIN, y4m, str(tmp_path / "out.y4m"))
    assert outcome.returncode == 0, outcome.stderr
    assert len(read(tmp_path / "ref.y4m")) > 12 * 320 * 180
    assert read(tmp_path / "out.y4m") == read(tmp_path / "ref.y4m")
    assert "12 frames" in outcome.stderr


@pytest.mark.parametrize("chunk", ["0", "1", "441"])
def test_example_audio_matches_rawfx_run_at_any_chunk_size(media, rawfx_command, tmp_path, chunk):
    _, wav = media
    subprocess.run([rawfx_command, "run", "--af", "denoise=level=-30", wav, str(tmp_path / "ref.wav")], check=True)
    outcome = run_example("--chunk", chunk, "--af", "denoise=level=-30", wav, str(tmp_path / "out.wav"))
    assert outcome.returncode == 0, outcome.stderr
    assert len(read(tmp_path / "ref.wav")) == 44 + 72000 * 2  # 1.5 s at 48 kHz: the input's length
    assert read(tmp_path / "out.wav") == read(tmp_path / "ref.wav")


def test_example_reports_a_bad_chain(media, tmp_path):
    y4m, _ = media
    outcome = run_example("--vf", "scale=width=abc", y4m, str(tmp_path / "out.y4m"))
    assert outcome.returncode != 0
    assert "RAWFX_E_CHAIN: scale: invalid value 'abc' for width" in outcome.stderr


# --- Video ------------------------------------------------------------------------------------

def test_registry_lists_filters_and_failures(registry, tmp_path):
    assert {"denoise", "mirror", "rotate", "scale", "watermark"} <= set(registry.filters)
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"not an ELF")
    only_junk = rawfx.Registry(search_path=[str(junk)], default_directory=False, use_environment=False)
    assert only_junk.filters == []
    assert only_junk.failures[0].startswith("%s: not a loadable shared object" % junk)
    with pytest.raises(rawfx.RawFXError) as error:
        rawfx.Registry(search_path=[str(tmp_path / "missing")])
    assert error.value.name == "RAWFX_E_NOT_FOUND"
    assert error.value.message == "%s: no such plugin file or directory" % (tmp_path / "missing")


def test_strided_planes_are_honoured(registry):
    y, u, v = picture(64, 36)
    chain = registry.video_chain("mirror")
    outputs = chain.process(padded(y), padded(u), padded(v))
    for got, plane in zip(outputs, (y, u, v)):
        np.testing.assert_array_equal(got, np.fliplr(plane))


def test_process_into_writes_the_callers_planes(registry):
    y, u, v = picture(48, 30, seed=2)
    planes = [padded(p.copy(), extra=5) for p in (y, u, v)]
    registry.video_chain("mirror=vertical=true").process_into(*planes)
    for got, plane in zip(planes, (y, u, v)):
        np.testing.assert_array_equal(got, np.flipud(plane))


def test_views_are_the_engines_buffers_until_the_next_call(registry):
    y, u, v = picture(32, 16)
    chain = registry.video_chain("rotate=angle=90")
    view = chain.process(y, u, v, copy=False)
    np.testing.assert_array_equal(view[0], np.rot90(y, -1))
    chain.process(*picture(32, 16, seed=9), copy=False)
    assert not np.array_equal(view[0], np.rot90(y, -1)), "the view shows the next frame: it is the engine's buffer"


def test_bypass_parameter_and_swap(registry):
    y, u, v = picture(40, 24, seed=4)
    chain = registry.video_chain("mirror,scale=width=40:height=24")
    np.testing.assert_array_equal(chain.process(y, u, v)[0], np.fliplr(y))
    chain.set_bypass("mirror")
    np.testing.assert_array_equal(chain.process(y, u, v)[0], y)
    chain.set_bypass("mirror", False)
    chain.set_parameter("mirror.vertical", True)
    np.testing.assert_array_equal(chain.process(y, u, v)[0], np.flipud(y))
    chain.replace(registry, "rotate=angle=270", negotiate_for=(40, 24))
    assert chain.swap_count == 0
    out = chain.process(y, u, v)
    assert chain.swap_count == 1
    for got, plane in zip(out, (y, u, v)):
        np.testing.assert_array_equal(got, np.rot90(plane, 1))
    with pytest.raises(rawfx.RawFXError) as error:
        chain.set_parameter("rotate.angle", "45")
    assert error.value.name == "RAWFX_E_CHAIN" and "invalid value '45' for angle" in error.value.message


def test_metrics_count_every_frame(registry):
    chain = registry.video_chain("mirror,rotate=angle=180")
    for seed in range(5):
        chain.process(*picture(16, 16, seed))
    chain.set_bypass("mirror")
    chain.process(*picture(16, 16))
    stages = chain.metrics()
    assert [(s["name"], s["frames"], s["bypassed"]) for s in stages] == [("mirror", 5, 1), ("rotate", 6, 0)]
    assert chain.metrics_json() == {"stages": stages}


def test_bad_frames_are_errors_not_crashes(registry):
    chain = registry.video_chain("mirror")
    y, u, v = picture(16, 8)
    with pytest.raises(ValueError, match="u: shape"):
        chain.process(y, v[:, :3], v)
    with pytest.raises(ValueError, match="expected a 2-D numpy array of uint8"):
        chain.process(y, u.astype(np.int16), v)
    with pytest.raises(ValueError, match="column stride 1"):
        chain.process(y, u, np.asfortranarray(np.zeros((4, 8), dtype=np.uint8))[:, ::-1])
    with pytest.raises(rawfx.RawFXError) as error:
        registry.video_chain("denoise")
    assert error.value.name == "RAWFX_E_CHAIN"
    assert "denoise is a audio filter and cannot go in a video chain" in error.value.message


# --- Audio ------------------------------------------------------------------------------------

def test_audio_any_chunking_gives_the_same_output(registry):
    rng = np.random.default_rng(1)
    pcm = (rng.standard_normal(48000) * 3000).astype(np.int16)

    def run(sizes):
        chain = registry.audio_chain("denoise=level=-30")
        assert chain.negotiate(48000, 1) == (48000, 1)
        pieces, start, i = [], 0, 0
        while start < len(pcm):
            size = sizes[i % len(sizes)]
            pieces.append(chain.process(pcm[start:start + size]))
            start, i = start + size, i + 1
        pieces.append(chain.drain())
        return np.concatenate(pieces), chain

    whole, chain = run([48000])
    assert whole.shape == (48000 + chain.latency, 1)
    assert chain.latency == 480
    assert chain.metrics()[0]["frames"] == (48000 + 480) // 480
    uneven, _ = run([1, 479, 333, 4801, 7])
    np.testing.assert_array_equal(uneven, whole)


def test_audio_parameter_and_bypass(registry):
    pcm = np.arange(-960, 960, dtype=np.int16).reshape(-1, 2) * 8
    chain = registry.audio_chain("gain=db=0")
    chain.negotiate(16000, 2)
    np.testing.assert_array_equal(chain.process(pcm), pcm)
    chain.set_bypass("gain")
    chain.set_parameter("gain.db", "40")
    np.testing.assert_array_equal(chain.process(pcm), pcm)  # bypassed: untouched
    with pytest.raises(ValueError, match=r"expected \(frames, 2\)"):
        chain.process(pcm[:, 0])
    with pytest.raises(rawfx.RawFXError, match="RAWFX_E_NOT_FOUND"):
        chain.set_parameter("gain.nope", "1")


def test_library_not_found_names_what_to_set(tmp_path):
    env = dict(os.environ, RAWFX_LIBRARY=str(tmp_path / "nope.so"))
    outcome = subprocess.run([sys.executable, "-c", "import rawfx"], env=env, capture_output=True, text=True)
    assert outcome.returncode != 0
    assert "librawfx not found; set RAWFX_LIBRARY" in outcome.stderr and "nope.so" in outcome.stderr


def test_log_lines_reach_the_callback_from_its_level_up(registry):
    """The scale filter logs its geometry at info when it is configured: with the callback at
    info it arrives with its source; at warning it does not."""
    lines = []
    rawfx.set_log_callback(lambda level, source, message: lines.append((level, source, message)), level="info")
    try:
        chain = rawfx.VideoChain(registry, "scale=width=320:height=180")
        chain.negotiate(640, 360)
        rawfx.sync_log()
        assert ("info", "scale") in [(level, source) for level, source, _ in lines], lines
        assert any("640x360 -> 320x180" in message for _, _, message in lines), lines

        lines.clear()
        rawfx.set_log_callback(lambda level, source, message: lines.append((level, source, message)), level="warning")
        rawfx.VideoChain(registry, "scale=width=160:height=90").negotiate(640, 360)
        rawfx.sync_log()
        assert lines == []
    finally:
        rawfx.set_log_callback(None)
    with pytest.raises(ValueError):
        rawfx.set_log_callback(print, level="loud")


def test_an_isolated_stage_finds_its_helper_and_logs_through_the_callback(registry):
    """scale@isolate runs in the helper process beside librawfx (no PATH, no variable needed):
    its output is the in-process scale's, and the geometry line it logs at configure reaches
    the callback with its source, as in process."""
    y, u, v = picture(640, 360, seed=9)
    lines = []
    rawfx.set_log_callback(lambda level, source, message: lines.append((level, source, message)), level="info")
    try:
        isolated = rawfx.VideoChain(registry, "scale@isolate=width=320:height=180")
        out = isolated.process(y, u, v)
        rawfx.sync_log()
        assert ("info", "scale") in [(level, source) for level, source, _ in lines], lines
        assert any("640x360 -> 320x180" in message for _, _, message in lines), lines
    finally:
        rawfx.set_log_callback(None)
    expected = rawfx.VideoChain(registry, "scale=width=320:height=180").process(y, u, v)
    for plane, reference in zip(out, expected):
        assert np.array_equal(plane, reference)


def test_thread_count_sets_the_engine_pool(registry):
    """set_thread_count(2) gives the engine's pool two threads; a quarter turn split over them
    is numpy's; 0 is refused with a message and changes nothing."""
    y, u, v = picture(640, 360, seed=4)
    before = rawfx.thread_count()
    try:
        rawfx.set_thread_count(2)
        assert rawfx.thread_count() == 2
        out = rawfx.VideoChain(registry, "rotate=angle=90").process(y, u, v)
        for plane, source in zip(out, (y, u, v)):
            np.testing.assert_array_equal(plane, np.rot90(source, k=-1))
        with pytest.raises(ValueError, match="count 0 is not a thread count"):
            rawfx.set_thread_count(0)
        assert rawfx.thread_count() == 2
    finally:
        rawfx.set_thread_count(before)
