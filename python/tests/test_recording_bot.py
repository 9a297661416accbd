"""python/examples/recording_bot.py (docs/production.md): Y4M and WAV on one clock, and down a
pipe into FFmpeg."""
import os
import shutil
import subprocess
import sys
import wave

import numpy as np
import pytest

import rawfx

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOT = os.path.join(REPOSITORY, "python", "examples", "recording_bot.py")


def test_the_recording_bot_writes_every_frame_and_the_audio_of_each(tmp_path):
    y4m, wav = str(tmp_path / "program.y4m"), str(tmp_path / "program.wav")
    run = subprocess.run([sys.executable, BOT, "--frames", "90", y4m, wav], capture_output=True, text=True, env=os.environ)
    assert run.returncode == 0, run.stderr
    assert "90 frames, 144000 audio samples at 48000 Hz" in run.stderr
    with open(y4m, "rb") as f:
        data = f.read()
    header = data.split(b"\n", 1)[0]
    assert header.startswith(b"YUV4MPEG2 W1280 H720 F30:1")
    assert len(data) == len(header) + 1 + 90 * (6 + 1280 * 720 * 3 // 2)
    with wave.open(wav) as w:
        assert (w.getframerate(), w.getnchannels(), w.getnframes()) == (48000, 1, 90 * 48000 // 30)
        pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2")
    assert np.abs(pcm[-48000:]).max() > 3000  # the speaker heard, resampled from 32000 Hz
    assert '"9"' not in run.stderr.split("last scene", 1)[1]  # user 9 left: re-flowed


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg is not installed")
def test_the_recording_bot_feeds_ffmpeg_through_a_pipe(tmp_path):
    mp4 = str(tmp_path / "program.mp4")
    bot = subprocess.Popen([sys.executable, BOT, "--frames", "45", "-"], stdout=subprocess.PIPE, env=os.environ)
    ffmpeg = subprocess.run(["ffmpeg", "-nostdin", "-y", "-loglevel", "error", "-f", "yuv4mpegpipe", "-i", "-",
                             "-c:v", "mpeg4", "-q:v", "5", mp4], stdin=bot.stdout, capture_output=True, text=True)
    bot.stdout.close()
    assert bot.wait() == 0
    assert ffmpeg.returncode == 0, ffmpeg.stderr
    probe = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                            "stream=width,height,nb_read_frames", "-of", "csv=p=0", mp4], capture_output=True, text=True)
    assert probe.stdout.strip() == "1280,720,45"


def test_the_mixer_sums_gained_inputs_in_blocks_of_the_video_clock():
    mixer = rawfx.Mixer(48000, priming_blocks=0)
    a, b = mixer.add_input("a"), mixer.add_input("b", gain_db=-6.0206)
    tone = np.full(4800, 1000, np.int16)
    a.submit(tone, 48000)
    b.submit(tone, 48000)
    assert list(mixer.mix(0)[:3]) == [1500, 1500, 1500]
    b.set_gain(-200)
    assert mixer.mix(1)[0] == 1000
    assert list(rawfx.Mixer.blocks_for_frame(0, 30)) == [0, 1, 2, 3]
    assert list(rawfx.Mixer.blocks_for_frame(1, 30)) == [4, 5, 6]
    with pytest.raises(rawfx.RawFXError, match="44150"):
        rawfx.Mixer(44150)
    mixer.close()
