import os
import shutil
import subprocess

import pytest

import rawfx

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPOSITORY, "python", "examples", "run_chain.py")
WATERMARK = os.path.join(REPOSITORY, "docs", "images", "before-640x360.png")


@pytest.fixture(scope="session")
def rawfx_command():
    """The `rawfx` command that goes with the library: $RAWFX_COMMAND, beside the library (a
    build folder), in the prefix's bin (an install), or on PATH."""
    library_dir = os.path.dirname(rawfx.library_path)
    for path in (os.environ.get("RAWFX_COMMAND"), os.path.join(library_dir, "rawfx"),
                 os.path.join(os.path.dirname(library_dir), "bin", "rawfx"), shutil.which("rawfx")):
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    pytest.skip("no rawfx command found; set RAWFX_COMMAND")


@pytest.fixture(scope="session")
def media(tmp_path_factory):
    """A real Y4M (12 frames of 640x360) and WAV (1.5 s of a tone in pink noise, 48 kHz mono)."""
    if shutil.which("ffmpeg") is None:
        pytest.skip("ffmpeg is not installed")
    directory = tmp_path_factory.mktemp("media")
    y4m, wav = str(directory / "in.y4m"), str(directory / "in.wav")
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25",
                    "-frames:v", "12", "-pix_fmt", "yuv420p", y4m], check=True)
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi",
                    "-i", "sine=frequency=440:sample_rate=48000:duration=1.5",
                    "-f", "lavfi", "-i", "anoisesrc=color=pink:amplitude=0.1:sample_rate=48000:duration=1.5",
                    "-filter_complex", "amix=inputs=2", "-ac", "1", "-c:a", "pcm_s16le", wav], check=True)
    return y4m, wav
