#!/usr/bin/env bash
# Installs the system libraries RawFX builds against, on Debian 12 (and Ubuntu):
#   libyuv-dev (scale/rotate/convert), libspeexdsp-dev (denoise/resample), libpng-dev (PNG),
#   pkg-config (SwiftPM finds speexdsp and libpng through it; embedders find rawfx.pc), ffmpeg
#   (end-to-end tests), python3 and python3-venv (the Python package's tests, in a venv: Debian's
#   own Python refuses `pip install` outside one), libswscale-dev, libavfilter-dev and
#   libavutil-dev (the headers `bench --peers` is built with; it opens FFmpeg at run time).
# Idempotent: when everything is installed it only checks and exits. Not root: prints the command.
set -euo pipefail

packages=(libyuv-dev libspeexdsp-dev libpng-dev pkg-config ffmpeg python3 python3-venv libswscale-dev libavfilter-dev libavutil-dev)

missing=()
for p in "${packages[@]}"; do
    [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == *"install ok installed"* ]] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "bootstrap: all system packages present (${packages[*]})"
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
echo "bootstrap: done"
