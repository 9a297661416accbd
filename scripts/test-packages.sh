#!/usr/bin/env bash
# CI's check of the packages (scripts/build-wheel.sh, scripts/build-deb.sh) as a bot machine gets
# them, with the Swift toolchain's libraries out of reach: every run below happens in a mount
# namespace where the toolchain's lib folder (/opt/swift/usr/lib) is an empty tmpfs, and with
# RAWFX_* and LD_LIBRARY_PATH unset.
#   wheel: pip install (timed, under 30 s) into a fresh venv holding only numpy and pytest, then
#          `import rawfx` loads the wheel's own librawfx, the Python tests (python/tests) pass, and
#          scripts/test-install.sh --against the wheel's rawfx/_native (its relocatable rawfx.pc)
#          builds and runs the C and C++ examples;
#   .deb:  lintian reports no error (its warnings are printed); `dpkg -x` gives the documented
#          layout and the extracted rawfx runs a chain; a real `dpkg -i` (timed, under 30 s), then
#          scripts/test-install.sh --against /usr (the C and C++ examples built with pkg-config
#          alone, outputs identical to rawfx run, isolated stages); `dpkg -r` removes every file.
#   both:  ldd of every installed ELF file names nothing under the toolchain and misses nothing.
# Needs root (dpkg -i) and a machine where rawfx is not already installed as a Debian package.
#
#   scripts/test-packages.sh [--dist DIR]      (default dist/: what build-wheel.sh and build-deb.sh wrote)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

dist=dist
case "${1:-}" in
    "") ;;
    --dist) dist=${2:?--dist needs a directory} ;;
    *) echo "test-packages.sh: unknown argument '$1'; expected --dist DIR" >&2; exit 2 ;;
esac
fail() { echo "test-packages: $*" >&2; exit 1; }
shopt -s nullglob
wheels=("$dist"/rawfx-*-py3-none-linux_x86_64.whl)
debs=("$dist"/rawfx_*_amd64.deb)
shopt -u nullglob
[ ${#wheels[@]} = 1 ] || fail "expected one wheel in $dist, found ${#wheels[@]} (scripts/build-wheel.sh)"
[ ${#debs[@]} = 1 ] || fail "expected one .deb in $dist, found ${#debs[@]} (scripts/build-deb.sh)"
wheel=$(readlink -f "${wheels[0]}")
deb=$(readlink -f "${debs[0]}")
[ "$(id -u)" = 0 ] || fail "dpkg -i needs root"
if dpkg-query -W -f='${Status}' rawfx 2>/dev/null | grep -q "install ok installed"; then
    fail "rawfx is already installed as a Debian package here; this test installs and removes it"
fi

toolchain_lib=$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")/lib   # /opt/swift/usr/lib
unset RAWFX_LIBRARY RAWFX_PLUGIN_PATH RAWFX_ISOLATE_HELPER RAWFX_COMMAND RAWFX_ALLOW_UNTRUSTED_PLUGINS LD_LIBRARY_PATH
# without_toolchain CMD...: CMD with the toolchain's lib folder hidden under an empty tmpfs.
if unshare -m -- sh -c "mount -t tmpfs none '$toolchain_lib'" 2> /dev/null; then
    without_toolchain() { unshare -m -- bash -c 'mount -t tmpfs none "$0" && exec "$@"' "$toolchain_lib" "$@"; }
    echo "test-packages: $toolchain_lib is hidden (an empty tmpfs in a mount namespace) for every run below"
else
    without_toolchain() { "$@"; }
    echo "test-packages: warning: cannot hide $toolchain_lib here (unshare -m refused); relying on ldd and RUNPATH checks only"
fi
seconds() { python3 -c 'import sys, time; print("%.1f" % (time.time() - float(sys.argv[1])))' "$1"; }
# check_elves DIR: every ELF file under DIR resolves all its libraries, none in the toolchain.
check_elves() {
    local file linked count=0
    while IFS= read -r -d '' file; do
        [[ $(head -c 4 "$file" | od -An -c | tr -d ' ') == 177ELF ]] || continue
        linked=$(without_toolchain ldd "$file")
        [[ $linked != *"$toolchain_lib"* && $linked != *"/opt/swift"* ]] || fail "ldd $file names the toolchain: $linked"
        [[ $linked != *"not found"* ]] || fail "ldd $file: a library is not found: $linked"
        if readelf -d "$file" | grep -E 'R(UN)?PATH' | grep -q "$toolchain_lib"; then fail "$file has the toolchain in its RUNPATH"; fi
        count=$((count + 1))
    done < <(find "$1" -type f -print0)
    [ "$count" -gt 0 ] || fail "no ELF file under $1"
    echo "test-packages: ldd of $count ELF files under $1: all resolved, none from the toolchain"
}

work=$(mktemp -d)
cleanup() {
    status=$?
    if dpkg-query -W -f='${Status}' rawfx 2>/dev/null | grep -q "install ok installed"; then dpkg -r rawfx > /dev/null || true; fi
    rm -rf "$work"
    exit $status
}
trap cleanup EXIT

# --- The wheel.
venv="$work/venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check numpy pytest   # the tests' own needs, from PyPI
start=$(date +%s.%N)
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-index "$wheel"
wheel_time=$(seconds "$start")
echo "test-packages: wheel $(basename "$wheel") ($(du -h "$wheel" | cut -f1)) installed in $wheel_time s"
awk -v t="$wheel_time" 'BEGIN { exit !(t < 30) }' || fail "installing the wheel took $wheel_time s (at most 30)"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
check_elves "$site/rawfx/_native"
loaded=$(cd "$work" && without_toolchain "$venv/bin/python" -c 'import rawfx; print(rawfx.library_path); print(*rawfx.Registry().filters)')
[[ $(head -1 <<< "$loaded") == "$site/rawfx/_native/lib/librawfx.so.1" ]] || fail "import rawfx did not load the wheel's library: $loaded"
for id in watermark scale rotate denoise resample gain; do
    [[ " $(tail -1 <<< "$loaded") " == *" $id "* ]] || fail "the wheel's registry lacks '$id': $(tail -1 <<< "$loaded")"
done
echo "test-packages: import rawfx loads $(head -1 <<< "$loaded") and finds $(tail -1 <<< "$loaded" | wc -w) filters"
(cd python/tests && without_toolchain "$venv/bin/python" -m pytest -q -p no:cacheprovider)
# The C and C++ examples against the wheel's headers and library (its relocatable rawfx.pc).
without_toolchain scripts/test-install.sh --against "$site/rawfx/_native"

# --- The .deb: lintian, its layout, then a real install.
lint=$(lintian --fail-on error "$deb" 2>&1) || { echo "$lint" >&2; fail "lintian reports errors on $deb"; }
echo "test-packages: lintian: no error; $(grep -c '^W:' <<< "$lint" || true) warnings${lint:+:}"
[ -z "$lint" ] || sed 's/^/  /' <<< "$lint"
extracted="$work/extracted"
dpkg-deb -x "$deb" "$extracted"
for path in usr/bin/rawfx usr/lib/librawfx.so.1 usr/lib/librawfx.so usr/libexec/rawfx/rawfx-isolate usr/include/rawfx_embed.h \
            usr/include/rawfx.h usr/include/rawfx/zoom_adapter.hpp usr/lib/pkgconfig/rawfx.pc usr/lib/rawfx/plugins/libRawFXYUV.so; do
    [ -e "$extracted/$path" ] || fail "the .deb has no /$path"
done
[ "$(readlink "$extracted/usr/lib/librawfx.so")" = librawfx.so.1 ] || fail "/usr/lib/librawfx.so is not a link to librawfx.so.1"
soname=$(readelf -d "$extracted/usr/lib/librawfx.so.1" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = librawfx.so.1 ] || fail "the .deb's librawfx.so.1 has SONAME '$soname'"
check_elves "$extracted"
ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=320x240:rate=25 -frames:v 3 -pix_fmt yuv420p "$work/in.y4m"
without_toolchain "$extracted/usr/bin/rawfx" run --vf 'scale=width=160:height=120,rotate=angle=90' "$work/in.y4m" "$work/extracted.y4m"
echo "test-packages: the extracted (dpkg -x) rawfx runs a chain with its own plugins"

start=$(date +%s.%N)
dpkg -i "$deb" > /dev/null
deb_time=$(seconds "$start")
echo "test-packages: $(basename "$deb") ($(du -h "$deb" | cut -f1)) installed with dpkg -i in $deb_time s"
awk -v t="$deb_time" 'BEGIN { exit !(t < 30) }' || fail "dpkg -i took $deb_time s (at most 30)"
installed_files=$(dpkg -L rawfx)
for file in $(grep -E '^/usr/(bin|lib|libexec)/' <<< "$installed_files"); do
    [ -f "$file" ] && [ ! -L "$file" ] && [[ $(head -c 4 "$file" | od -An -c | tr -d ' ') == 177ELF ]] || continue
    linked=$(without_toolchain ldd "$file")
    [[ $linked != *"/opt/swift"* && $linked != *"not found"* ]] || fail "ldd $file: $linked"
done
[[ $(without_toolchain /usr/bin/rawfx plugins) == *denoise* ]] || fail "/usr/bin/rawfx lists no denoise filter"
# The C and C++ examples against /usr (pkg-config's default path), as test-install.sh runs them.
without_toolchain env -u PKG_CONFIG_PATH scripts/test-install.sh --against /usr
(cd "$work" && without_toolchain python3 -c '
import ctypes
lib = ctypes.CDLL("librawfx.so.1")   # by SONAME, through ld.so.cache (the ldconfig trigger)
lib.rawfx_embed_version.restype = ctypes.c_uint32
print("test-packages: librawfx.so.1 by SONAME: embedding API", lib.rawfx_embed_version())')

dpkg -r rawfx > /dev/null
left=()
while IFS= read -r path; do
    [ "$path" = /. ] && continue
    if [ -L "$path" ] || [ -f "$path" ]; then left+=("$path"); fi
    case "$path" in /usr/lib/rawfx|/usr/lib/rawfx/*|/usr/libexec/rawfx|/usr/include/rawfx|/usr/include/rawfx/*|/usr/share/doc/rawfx)
        [ -d "$path" ] && left+=("$path/") ;;
    esac
done <<< "$installed_files"
[ ${#left[@]} = 0 ] || fail "dpkg -r left: ${left[*]}"
echo "test-packages: dpkg -r removed all $(wc -l <<< "$installed_files") paths"
echo "test-packages: install times: wheel $wheel_time s, .deb $deb_time s"
