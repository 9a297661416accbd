#!/usr/bin/env bash
# Soak: minutes of 720p video and 48 kHz audio through every SDK hook at once, with chain
# swaps and run-time parameter changes every second; fails if a frame or sample is lost, an
# SDK rule is broken, a raw data reference or a hook leaks, or resident memory grows after
# warm-up (Tests/RawFXSDKTests/SoakTests.swift; the test suite runs the same test for 10 s).
#
#   scripts/soak.sh [seconds]          default 180
#   SOAK_INTERVAL_MS=500 scripts/soak.sh 600   swaps and parameter changes every 500 ms
#   SOAK_FPS=0 scripts/soak.sh         video as fast as it goes instead of 30 frames/s
#
# Prints the figures (frames, swaps, parameter changes, RSS once a second) and keeps them in
# .build/soak.log.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-180}
if ! [[ $seconds =~ ^[0-9]+$ ]] || [ "$seconds" -lt 4 ]; then
    echo "soak: the run length must be a whole number of seconds, at least 4 (got '$seconds')" >&2
    exit 2
fi

swift build --build-tests
mkdir -p .build
RAWFX_SOAK_SECONDS=$seconds RAWFX_SOAK_INTERVAL_MS=${SOAK_INTERVAL_MS:-1000} RAWFX_SOAK_FPS=${SOAK_FPS:-30} \
    swift test --skip-build --filter SoakTests 2>&1 | tee .build/soak.log | grep -E '^soak:|error:|Executed|passed|failed'
exit "${PIPESTATUS[0]}"
