#!/usr/bin/env bash
# CI's check of scripts/install.sh: installs into a temporary prefix, builds the example plugin
# (docs/examples/invert.c), the example embedder (docs/examples/embed.c), the C hooks example
# (docs/examples/hooks.c) and the C++ adapter test (zoom-standin/adapter_test.cpp) with nothing but
# `pkg-config --cflags --libs rawfx`, runs them against the installed command and library
# only (no build folder on any path), then uninstalls and checks the prefix is empty.
#
#
#   scripts/test-install.sh [--configuration release|debug]   (default release)
#   scripts/test-install.sh --against PREFIX
# --against runs the same checks against an installation made otherwise (the .deb's /usr, the
# wheel's rawfx/_native: scripts/test-packages.sh), with neither install.sh nor uninstall.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
configuration=release
against=""
case "${1:-}" in
    "") ;;
    --configuration) configuration=${2:?--configuration needs release or debug} ;;
    --against) against=${2:?--against needs the prefix of an installation} ;;
    *) echo "test-install.sh: unknown argument '$1'; expected --configuration release|debug or --against PREFIX" >&2; exit 2 ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "$against" ]; then
    prefix=$against
    [ -f "$prefix/lib/pkgconfig/rawfx.pc" ] || { echo "test-install: $prefix/lib/pkgconfig/rawfx.pc is missing: no RawFX installation there" >&2; exit 1; }
else
    prefix="$work/prefix"
    scripts/install.sh --prefix "$prefix" --configuration "$configuration" --no-build
fi

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
unset RAWFX_PLUGIN_PATH
cd "$work"
cc -std=c99 -Wall -Wextra -Werror -shared -fPIC $(pkg-config --cflags rawfx) "$OLDPWD/docs/examples/invert.c" -o invert.so
cc -std=c99 -Wall -Wextra -Werror "$OLDPWD/docs/examples/embed.c" $(pkg-config --cflags --libs rawfx) -o embed
cc -std=c99 -Wall -Wextra -Werror "$OLDPWD/docs/examples/hooks.c" $(pkg-config --cflags --libs rawfx) -o hooks
standin="$OLDPWD/Tests/Fixtures/zoom-standin"
c++ -std=c++17 -Wall -Wextra -Werror -I "$standin" $(pkg-config --cflags rawfx) "$standin/adapter_test.cpp" \
    $(pkg-config --libs rawfx) -o adapter_test
# ldd's output is captured whole first: `ldd | grep -q` under pipefail fails at random when grep
# exits at its first match and ldd dies of SIGPIPE before its last line.
linked=$(ldd ./embed)
# (librawfx.so.1 => ... with a SONAME, as the .deb's library has; compared as real paths, since
# ld.so.cache may name /usr/lib/librawfx.so.1 as /lib/librawfx.so.1 on a merged-/usr system.)
loaded=$(sed -n 's/^[[:space:]]*librawfx\.so\(\.1\)\{0,1\} => \([^ ]*\) .*/\2/p' <<< "$linked")
# The wheel's tree has librawfx.so.1 only (a wheel holds no symbolic link).
expected="$prefix/lib/librawfx.so"
[ -e "$expected" ] || expected="$prefix/lib/librawfx.so.1"
[ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$(readlink -f "$expected")" ] ||
    { echo "test-install: embed does not load $expected" >&2; echo "$linked" >&2; exit 1; }

# A Y4M and a WAV; the installed library finds the installed plugins by default.
ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=320x240:rate=25 -frames:v 5 -pix_fmt yuv420p in.y4m
ffmpeg -nostdin -loglevel error -f lavfi -i 'sine=frequency=300:sample_rate=16000:duration=0.5' -c:a pcm_s16le in.wav
chain='invert=chroma=true,scale=width=160:height=120,rotate=angle=270'
"$prefix/bin/rawfx" run --plugin-path invert.so --vf "$chain" in.y4m ref.y4m
./embed --plugin-path invert.so --vf "$chain" in.y4m out.y4m
cmp ref.y4m out.y4m
"$prefix/bin/rawfx" run --af denoise in.wav ref.wav
./embed --af denoise in.wav out.wav
cmp ref.wav out.wav
# The SDK hooks from C and C++ (docs/embedding.md), against the installed library and plugins.
hooks_chain='scale=width=160:height=120,rotate=angle=270'
"$prefix/bin/rawfx" run --vf "$hooks_chain" in.y4m ref-hooks.y4m
./hooks --vf "$hooks_chain" 120x160 in.y4m out-hooks.y4m 2> /dev/null
cmp ref-hooks.y4m out-hooks.y4m
./adapter_test video-source meeting "$hooks_chain" 120x160 in.y4m out-adapter.y4m 2> /dev/null
cmp ref-hooks.y4m out-adapter.y4m
./hooks --af denoise in.wav out-hooks.wav 2> /dev/null
cmp ref.wav out-hooks.wav
# Isolated stages (docs/isolation.md): the installed rawfx and librawfx find the installed helper
# (PREFIX/libexec/rawfx) with no build folder and nothing on PATH; the output is the in-process one.
iso_chain='invert@isolate=chroma=true,scale@isolate=width=160:height=120'
PATH=/usr/bin:/bin "$prefix/bin/rawfx" run --plugin-path invert.so --vf "$iso_chain" in.y4m iso-ref.y4m
PATH=/usr/bin:/bin ./embed --plugin-path invert.so --vf "$iso_chain" in.y4m iso-out.y4m
"$prefix/bin/rawfx" run --plugin-path invert.so --vf 'invert=chroma=true,scale=width=160:height=120' in.y4m plain.y4m
cmp plain.y4m iso-ref.y4m
cmp plain.y4m iso-out.y4m
"$prefix/bin/rawfx" validate invert.so > /dev/null
echo "test-install: the plugin, the embedder and the hooks (C and C++) built with pkg-config alone; outputs identical to rawfx run, isolated stages included"

cd "$OLDPWD"
[ -n "$against" ] && exit 0
scripts/uninstall.sh --prefix "$prefix"
left=$(find "$prefix" -mindepth 1)
[ -z "$left" ] || { echo "test-install: uninstall left: $left" >&2; exit 1; }
echo "test-install: uninstall removed everything"
