#!/usr/bin/env bash
# The one release build the packages are made from (scripts/build-wheel.sh, scripts/build-deb.sh):
#   RAWFX_PACKAGING=1 swift build -c release -Xswiftc -static-stdlib --scratch-path .build-release
# then a staged tree in .build-release/stage, laid out like an installation prefix:
#   bin/rawfx                       the command
#   lib/librawfx.so.1               the engine behind the C API (SONAME librawfx.so.1)
#   lib/rawfx/plugins/*.so          the shipped plugins (librawfx and rawfx find them there)
#   libexec/rawfx/rawfx-isolate     the isolated stages' helper (found as ../libexec/rawfx from lib/ and bin/)
#   include/...                     rawfx.h, rawfx/ext/*.h, rawfx/plugin_helpers.h, rawfx_embed.h,
#                                   rawfx_hooks.h, rawfx/zoom_adapter.hpp
#   VERSION                         the engine's version (rawfx --version)
# The Swift standard library, Dispatch and Foundation (FoundationEssentials only in librawfx and the
# helper: the engine imports no more, which keeps ICU's data out) are linked in statically: no staged file
# needs the Swift toolchain at run time. The files are stripped and carry no RUNPATH (the
# packagers set their own). The script fails unless:
#   - librawfx.so.1's SONAME is librawfx.so.1 and its dynamic symbols are exactly the functions
#     declared in rawfx_embed.h and rawfx_hooks.h (Sources/RawFXEmbed/librawfx.map says the same);
#   - each plugin exports rawfx_get_plugin_entry and nothing else;
#   - no staged file needs a library from the toolchain (readelf NEEDED: no libswift*,
#     libFoundation*, libdispatch, libBlocksRuntime; ldd: nothing under the toolchain).
# It prints each staged file's size.
#
#   scripts/build-release.sh [--no-build]    --no-build stages what an earlier run built
set -euo pipefail
cd "$(dirname "$0")/.."

build=1
case "${1:-}" in
    "") ;;
    --no-build) build=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "build-release.sh: unknown argument '$1'; expected --no-build" >&2; exit 2 ;;
esac

scratch=.build-release
flags=(-c release --scratch-path "$scratch" -Xswiftc -static-stdlib)
plugins=(libRawFXWatermark.so libRawFXYUV.so libRawFXSpeex.so libRawFXSpeech.so libRawFXBasics.so libRawFXText.so)
products=(RawFXEmbed RawFXWatermark RawFXYUV RawFXSpeex RawFXSpeech RawFXBasics RawFXText rawfx-isolate rawfx)
export RAWFX_PACKAGING=1
if [ "$build" = 1 ]; then
    # One product at a time: `swift build` alone would also build bench, which no package ships.
    for product in "${products[@]}"; do swift build "${flags[@]}" --product "$product"; done
fi
bin=$(swift build "${flags[@]}" --show-bin-path)
for file in rawfx rawfx-isolate libRawFXEmbed.so "${plugins[@]}"; do
    [ -f "$bin/$file" ] || { echo "build-release.sh: $bin/$file is missing; run without --no-build" >&2; exit 1; }
done

stage="$scratch/stage"
rm -rf "$stage"
umask 022
install -D -m 755 "$bin/rawfx" "$stage/bin/rawfx"
install -D -m 755 "$bin/libRawFXEmbed.so" "$stage/lib/librawfx.so.1"
for plugin in "${plugins[@]}"; do install -D -m 755 "$bin/$plugin" "$stage/lib/rawfx/plugins/$plugin"; done
install -D -m 755 "$bin/rawfx-isolate" "$stage/libexec/rawfx/rawfx-isolate"
include=Sources/CRawFX/include
install -D -m 644 "$include/rawfx.h" "$stage/include/rawfx.h"
install -D -m 644 "$include/rawfx/plugin_helpers.h" "$stage/include/rawfx/plugin_helpers.h"
for header in "$include"/rawfx/ext/*.h; do install -D -m 644 "$header" "$stage/include/rawfx/ext/$(basename "$header")"; done
install -D -m 644 Sources/CRawFXEmbed/include/rawfx_embed.h "$stage/include/rawfx_embed.h"
install -D -m 644 Sources/CRawFXEmbed/include/rawfx_hooks.h "$stage/include/rawfx_hooks.h"
install -D -m 644 Sources/CRawFXEmbed/include/rawfx/zoom_adapter.hpp "$stage/include/rawfx/zoom_adapter.hpp"

binaries=("$stage/bin/rawfx" "$stage/lib/librawfx.so.1" "$stage/libexec/rawfx/rawfx-isolate")
for plugin in "${plugins[@]}"; do binaries+=("$stage/lib/rawfx/plugins/$plugin"); done
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")  # /opt/swift/usr
fail() { echo "build-release.sh: $*" >&2; exit 1; }
for file in "${binaries[@]}"; do
    # --strip-unneeded keeps the dynamic symbol table (the exports) and drops the rest.
    strip --strip-unneeded "$file"
    # swiftc records the toolchain's library folder and SwiftPM $ORIGIN: neither is wanted here.
    patchelf --remove-rpath "$file"
    needed=$(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    if grep -E '^lib(swift|Foundation|_Foundation|dispatch|BlocksRuntime)' <<< "$needed"; then
        fail "$file needs a library of the Swift toolchain (above)"
    fi
    linked=$(ldd "$file")
    [[ $linked != *"$toolchain"* ]] || fail "ldd of $file names the toolchain ($toolchain): $linked"
    [[ $linked != *"not found"* ]] || fail "ldd of $file: a library is not found: $linked"
done

# librawfx: its SONAME, and exactly the C API exported.
soname=$(readelf -d "$stage/lib/librawfx.so.1" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = librawfx.so.1 ] || fail "librawfx.so.1 has SONAME '$soname'; expected librawfx.so.1 (was RAWFX_PACKAGING=1 seen by Package.swift?)"
# A declaration's line starts with its return type and holds the name and its parenthesis.
declared=$(grep -hoE '^[A-Za-z].*\brawfx_[a-z0-9_]+\(' Sources/CRawFXEmbed/include/rawfx_embed.h Sources/CRawFXEmbed/include/rawfx_hooks.h \
    | grep -oE 'rawfx_[a-z0-9_]+\($' | tr -d '(' | sort -u)
mapped=$(sed -n 's/^ *\(rawfx_[a-z0-9_]*\);$/\1/p' Sources/RawFXEmbed/librawfx.map | sort -u)
exported=$(nm -D --defined-only "$stage/lib/librawfx.so.1" | awk '$2 ~ /^[TDBRVW]$/ && $3 != "RAWFX_1" {sub(/@.*/, "", $3); print $3}' | sort -u)
[ "$declared" = "$mapped" ] || fail "Sources/RawFXEmbed/librawfx.map differs from the headers' functions: $(diff <(echo "$declared") <(echo "$mapped") || true)"
[ "$declared" = "$exported" ] || fail "librawfx.so.1 exports differ from the headers' functions: $(diff <(echo "$declared") <(echo "$exported") || true)"
for plugin in "${plugins[@]}"; do
    exports=$(nm -D --defined-only "$stage/lib/rawfx/plugins/$plugin" | awk '$2 ~ /^[TDBRVW]$/ {print $3}')
    [ "$exports" = rawfx_get_plugin_entry ] || fail "$plugin exports more than rawfx_get_plugin_entry: $exports"
done

"$stage/bin/rawfx" --version > "$stage/VERSION"
echo "build-release.sh: RawFX $(cat "$stage/VERSION") staged in $stage; $(echo "$declared" | wc -l) functions exported by librawfx.so.1; sizes:"
(cd "$stage" && for file in bin/rawfx lib/librawfx.so.1 libexec/rawfx/rawfx-isolate lib/rawfx/plugins/*.so; do
    awk -v f="$file" -v s="$(stat -c %s "$file")" 'BEGIN { printf "  %-40s %6.1f MB\n", f, s / 1048576 }'
done)
