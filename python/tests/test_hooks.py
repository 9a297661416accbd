"""The SDK hooks from Python (rawfx.hooks) against independent references: `rawfx run`'s files,
numpy's own flips of the planes, and the input itself where the chain copies."""
import os
import subprocess
import sys

import numpy as np
import pytest

import rawfx
from conftest import REPOSITORY
from test_rawfx import VIDEO_CHAIN, padded, picture, read

BOT = os.path.join(REPOSITORY, "python", "examples", "bot.py")


@pytest.fixture
def registry():
    return rawfx.Registry()


# --- The done-when: the example bot loop writes what rawfx run writes ------------------------

@pytest.mark.parametrize("async_speaker", [False, True])
def test_bot_writes_what_rawfx_run_writes(media, rawfx_command, tmp_path, async_speaker):
    y4m, wav = media
    subprocess.run([rawfx_command, "run", "--vf", VIDEO_CHAIN, y4m, str(tmp_path / "ref.y4m")], check=True)
    subprocess.run([rawfx_command, "run", "--af", "denoise=level=-30", wav, str(tmp_path / "ref.wav")], check=True)
    env = dict(os.environ, RAWFX_LIBRARY=rawfx.library_path)
    env.pop("RAWFX_PLUGIN_PATH", None)
    # The chain ends at 180x320 and the fake SDK suggests exactly that: nothing is fitted.
    outcome = subprocess.run([sys.executable, BOT, "--vf", VIDEO_CHAIN, "--size", "180x320", "--af", "denoise=level=-30"]
                             + (["--async-speaker"] if async_speaker else [])
                             + [y4m, wav, str(tmp_path / "out.y4m"), str(tmp_path / "out.wav")],
                             env=env, capture_output=True, text=True)
    assert outcome.returncode == 0, outcome.stderr
    assert len(read(tmp_path / "ref.y4m")) > 12 * 320 * 180
    assert read(tmp_path / "out.y4m") == read(tmp_path / "ref.y4m")
    assert read(tmp_path / "out.wav") == read(tmp_path / "ref.wav")
    assert "'video_source_started', 'video_source_stopped'" in outcome.stderr


# --- Each hook --------------------------------------------------------------------------------

def test_pre_processor_edits_the_sdks_planes_in_place(registry):
    y, u, v = picture(48, 30, seed=3)
    planes = [padded(p.copy(), extra=7) for p in (y, u, v)]
    hook = rawfx.PreProcessor(registry, "mirror")
    hook.process(*planes)
    for got, plane in zip(planes, (y, u, v)):
        np.testing.assert_array_equal(got, np.fliplr(plane))
    assert planes[0].base[0, 48:].tolist() == [0xEE] * 7, "the row padding is the SDK's: untouched"
    hook.set_bypass("mirror")
    hook.process(*planes)  # bypassed: still mirrored once
    np.testing.assert_array_equal(planes[0], np.fliplr(y))
    assert hook.metrics()["hook"]["frames"] == 2
    with pytest.raises(rawfx.RawFXError) as error:
        rawfx.PreProcessor(registry, "scale=width=32:height=16")
    assert error.value.name == "RAWFX_E_CHAIN" and "pre-processing cannot resize" in error.value.message
    with pytest.raises(ValueError, match="read-only"):
        y.flags.writeable = False
        hook.process(y, u, v)


def test_speaker_streams_keep_their_own_chains(registry):
    got = {}
    speaker = rawfx.VirtualSpeaker(registry, "gain=db=0", sink=lambda s, user, pcm: got.setdefault((s, user), []).append(pcm))
    one = np.arange(0, 960, dtype=np.int16).reshape(-1, 2)
    speaker.receive(rawfx.ONE_WAY, one, 48000, user_id=rawfx.user_key("42"))
    speaker.receive(rawfx.SHARED, one.tobytes(), 48000)  # the SDK's buffer as bytes: mono
    speaker.set_parameter("gain.db", "6.0206")             # +6 dB: each sample doubles
    speaker.receive(rawfx.MIXED, one[:, 0], 16000)
    assert set(got) == {(rawfx.ONE_WAY, 42), (rawfx.SHARED, 0), (rawfx.MIXED, 0)}
    np.testing.assert_array_equal(np.concatenate(got[(rawfx.ONE_WAY, 42)]), one)
    np.testing.assert_array_equal(np.concatenate(got[(rawfx.SHARED, 0)]).ravel(), one.ravel())
    doubled = np.concatenate(got[(rawfx.MIXED, 0)]).ravel().astype(int)
    assert np.abs(doubled - 2 * one[:, 0].astype(int)).max() <= 1
    with pytest.raises(rawfx.RawFXError, match="RAWFX_E_INVALID_ARGUMENT.*stream is 9"):
        speaker.receive(9, one, 48000)
    with pytest.raises(rawfx.RawFXError, match="buffer_len is 0"):
        speaker.receive(rawfx.MIXED, np.zeros(0, dtype=np.int16), 48000)


def test_video_source_sends_only_while_the_sdk_sends(registry):
    sent, events = [], []
    source = rawfx.VideoSource(registry, "mirror")
    source.on_lifecycle(lambda name, description, capability: events.append((name, capability)))
    y, u, v = picture(32, 16, seed=1)
    assert source.push_frame(y, u, v) is False  # no sender yet
    source.on_initialize(lambda frame, w, h, rotation, fmt: sent.append((frame.copy(), w, h)),
                         supported=[(32, 16, 30)], suggested=(32, 16, 30))
    assert source.push_frame(y, u, v) is False  # not started
    source.on_start_send()
    assert source.push_frame(padded(y), padded(u), padded(v)) is True
    source.on_stop_send()
    assert source.push_frame(y, u, v) is False
    assert len(sent) == 1 and sent[0][1:] == (32, 16)
    expected = np.concatenate([np.fliplr(p).ravel() for p in (y, u, v)])
    np.testing.assert_array_equal(sent[0][0], expected)
    assert source.capability == (32, 16, 30)
    assert events == [("video_source_initialized", (32, 16, 30)), ("video_source_started", None),
                      ("video_source_stopped", None)]
    assert source.metrics()["refused"] == 3


def test_video_source_fits_the_suggested_capability(registry):
    sent = []
    source = rawfx.VideoSource(registry, "")
    source.on_initialize(lambda frame, w, h, rotation, fmt: sent.append((w, h, len(frame))), [], (64, 36, 30))
    source.on_start_send()
    source.push_frame(*picture(128, 72))
    source.on_property_change([], (32, 18, 15))
    source.push_frame(*picture(128, 72))
    assert sent == [(64, 36, 64 * 36 * 3 // 2), (32, 18, 32 * 18 * 3 // 2)]


def test_virtual_mic_sends_10_ms_chunks_of_what_was_pushed(registry):
    chunks = []
    mic = rawfx.VirtualMic(registry, "", target_rate=16000, pacing="caller")
    mic.on_initialize(lambda chunk, rate, channel: chunks.append((chunk.copy(), rate, channel)))
    pcm = np.arange(-800, 800, dtype=np.int16)  # 100 ms at 16 kHz
    assert mic.push_audio(pcm, 16000) is False   # not started: refused
    mic.on_start_send()
    assert mic.push_audio(pcm[:1000], 16000, timestamp_us=0) is True
    assert mic.push_audio(pcm[1000:], 16000) is True
    now, due = 0, 0
    while due is not None and now < 1_000_000:
        due = mic.pump(now)
        now += 10_000
    assert mic.chunks_sent == 10
    assert all(rate == 16000 and channel == 0 and len(chunk) == 160 for chunk, rate, channel in chunks)
    np.testing.assert_array_equal(np.concatenate([c for c, _, _ in chunks]), pcm)
    with pytest.raises(rawfx.RawFXError, match="RAWFX_E_STATE"):
        rawfx.VirtualMic(registry, "", pacing="worker").pump(0)
    with pytest.raises(rawfx.RawFXError, match="cannot send 12345 Hz"):
        rawfx.VirtualMic(registry, "", target_rate=12345)


def test_set_chain_swaps_between_frames(registry):
    hook = rawfx.PreProcessor(registry, "mirror")
    y, u, v = picture(16, 8, seed=5)
    planes = [p.copy() for p in (y, u, v)]
    hook.set_chain("mirror=vertical=true")
    hook.process(*planes)
    np.testing.assert_array_equal(planes[0], np.flipud(y))
    with pytest.raises(rawfx.RawFXError, match="RAWFX_E_NOT_FOUND"):
        hook.set_chain("nope")



def test_receive_video_per_user_through_a_pipe(registry):
    got = []
    receiver = rawfx.ReceiveVideo(registry, "mirror", sink=lambda user, kind, y, u, v: got.append((user, kind, y, u, v)))
    pipe = {}

    def subscribe(delegate, resolution):
        if resolution == 100:
            return 7  # the SDK refuses Auto for raw data
        pipe["delegate"] = delegate
        return 0

    with pytest.raises(rawfx.RawFXError, match="RAWFX_E_PROCESS.*refused the subscription"):
        receiver.subscribe(subscribe, lambda d: 0, user_id=5, resolution=100)
    receiver.subscribe(subscribe, lambda d: pipe.pop("delegate") and 0, user_id=5, resolution=2)
    y, u, v = picture(32, 18, seed=7)
    pipe["delegate"].frame_received(padded(y), padded(u), padded(v))
    assert [(user, kind) for user, kind, *_ in got] == [(5, rawfx.ReceiveVideo.VIDEO)]
    for plane, original in zip(got[0][2:], (y, u, v)):
        np.testing.assert_array_equal(plane, np.fliplr(original))
    receiver.unsubscribe(5)
    assert "delegate" not in pipe, "unsubscribe reached the pipe"
    with pytest.raises(rawfx.RawFXError, match="RAWFX_E_NOT_FOUND"):
        receiver.unsubscribe(5)


def test_production_studio_sends_the_declared_capability_and_10_ms_audio(registry):
    video, audio = [], []
    studio = rawfx.ProductionStudio(registry, "mirror", "", capability=(32, 18, "limited"), audio_rate=32000,
                                    pacing="caller")
    y, u, v = picture(64, 36, seed=8)
    assert studio.push_frame(y, u, v) is False          # PS mode not started: refused
    studio.on_start_ps_mode_result(True)
    studio.on_start_send(lambda frame, w, h, fmt: video.append((w, h, fmt, len(frame))),
                         lambda chunk, rate, channel: audio.append(chunk.copy()))
    assert studio.push_frame(y, u, v) is True           # fitted to 32x18: mirrored, then scaled
    pcm = np.arange(0, 640, dtype=np.int16)             # 20 ms at 32 kHz
    assert studio.push_audio(pcm, 32000, timestamp_us=0) is True
    now, due = 0, 0
    while due is not None and now < 1_000_000:
        due = studio.pump(now)
        now += 10_000
    assert video == [(32, 18, 0, 32 * 18 * 3 // 2)]
    assert [len(c) for c in audio] == [320, 320]
    np.testing.assert_array_equal(np.concatenate(audio), pcm)
    studio.set_parameter("mirror.vertical", True, media="video")
    with pytest.raises(rawfx.RawFXError, match="RAWFX_E_INVALID_ARGUMENT.*production studio has a video and an audio chain"):
        rawfx.hooks.Hook.set_chain(studio, "mirror")
    studio.on_stop_send()
    assert studio.push_frame(y, u, v) is False
    assert studio.metrics()["video"]["refused"] == 2


def test_share_source_shares_only_between_started_and_stopped(registry):
    sent, events = [], []
    share = rawfx.ShareSource(registry, "mirror")
    share.on_lifecycle(lambda name, description, capability: events.append(name))
    y, u, v = picture(32, 16, seed=3)
    assert share.push_frame(y, u, v) is False  # not sharing yet
    share.on_share_send_started(lambda frame, w, h, fmt: sent.append((frame.copy(), w, h, fmt)))
    assert share.push_frame(padded(y), padded(u), padded(v)) is True
    share.on_share_send_stopped()
    assert share.push_frame(y, u, v) is False
    assert [(w, h, fmt) for _, w, h, fmt in sent] == [(32, 16, 0)]  # limited range: FrameDataFormat_I420_LIMITED
    np.testing.assert_array_equal(sent[0][0], np.concatenate([np.fliplr(p).ravel() for p in (y, u, v)]))
    assert events == ["share_started", "share_stopped"]
    assert share.metrics()["refused"] == 2
    # No sender from the SDK: nothing is shared.
    share.on_share_send_started(None)
    assert share.push_frame(y, u, v) is False
    assert len(sent) == 1


def test_share_source_fits_the_output_size(registry):
    sent = []
    share = rawfx.ShareSource(registry, "", output_size=(32, 18))
    share.on_share_send_started(lambda frame, w, h, fmt: sent.append((w, h, len(frame))))
    share.push_frame(*picture(128, 72))
    assert sent == [(32, 18, 32 * 18 * 3 // 2)]
    with pytest.raises(rawfx.RawFXError, match="output size is 33x18"):
        rawfx.ShareSource(registry, "", output_size=(33, 18))


def test_receive_video_streams_share_a_pool_of_workers(registry):
    """Six users over two workers: each user's frames arrive in order, each flipped alone."""
    got = {}
    receiver = rawfx.ReceiveVideo(registry, "mirror", sink=lambda user, kind, y, u, v: got.setdefault(user, []).append(y),
                                  async_=True, capacity=8, workers=2)
    delegates = {}

    def subscriber(user):
        def subscribe(delegate, resolution):
            delegates[user] = delegate
            return 0
        return subscribe
    for user in range(1, 7):
        receiver.subscribe(subscriber(user), lambda d: 0, user_id=user, resolution=1)
    pictures = {(user, n): picture(32, 18, seed=user * 10 + n) for user in range(1, 7) for n in range(4)}
    for n in range(4):
        for user in range(1, 7):
            delegates[user].frame_received(*pictures[(user, n)])
    receiver.wait_idle()
    for user in range(1, 7):
        assert len(got[user]) == 4
        for n, y in enumerate(got[user]):
            np.testing.assert_array_equal(y, np.fliplr(pictures[(user, n)][0]))
    assert receiver.metrics()["hook"]["drops"] == 0
    receiver.close()
