#!/usr/bin/env bash
# Installs RawFX like a system library (docs/embedding.md):
#   PREFIX/include/rawfx.h, rawfx/ext/*.h, rawfx/plugin_helpers.h   the plugin ABI
#   PREFIX/include/rawfx_embed.h, rawfx_hooks.h                     the embedding API, the SDK hooks
#   PREFIX/include/rawfx/zoom_adapter.hpp                           the C++ adapter for the Linux SDKs
#   PREFIX/lib/librawfx.so                                          the engine behind that API
#   PREFIX/lib/rawfx/plugins/*.so                                   the shipped plugins (found by default)
#   PREFIX/bin/rawfx                                                the command
#   PREFIX/libexec/rawfx/rawfx-isolate                              the isolated stages' helper
#   PREFIX/lib/pkgconfig/rawfx.pc                                   pkg-config --cflags --libs rawfx
#   PREFIX/share/rawfx/install-manifest                             every file written, for uninstall.sh
# The Swift runtime is not copied: librawfx, the plugins and rawfx find it in the toolchain
# (/opt/swift/usr/lib/swift/linux, recorded in their RUNPATH by swiftc).
#
#   scripts/install.sh [--prefix DIR] [--configuration release|debug] [--no-build]
# --no-build installs what an earlier `swift build` of that configuration left.
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=/usr/local
configuration=release
build=1
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
        --prefix=*) prefix=${1#--prefix=}; shift ;;
        --configuration) configuration=${2:?--configuration needs release or debug}; shift 2 ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "install.sh: unknown argument '$1'; expected --prefix DIR, --configuration release|debug or --no-build" >&2; exit 2 ;;
    esac
done
case "$configuration" in release|debug) ;; *) echo "install.sh: --configuration is '$configuration'; expected release or debug" >&2; exit 2 ;; esac
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)

# Plugins are trusted only if nobody but root and their owner can change them (docs/cli.md).
umask 022
if [ "$build" = 1 ]; then swift build -c "$configuration"; fi
bin=$(swift build -c "$configuration" --show-bin-path)
# libRawFXSpeech.so opens its models (PyPI wheels, scripts/bootstrap.sh) at run time;
# libRawFXText.so its fonts (/usr/share/fonts: fonts-dejavu-core, fonts-noto-core).
plugins=(libRawFXWatermark.so libRawFXYUV.so libRawFXSpeex.so libRawFXSpeech.so libRawFXBasics.so libRawFXText.so)
for file in rawfx rawfx-isolate libRawFXEmbed.so "${plugins[@]}"; do
    [ -f "$bin/$file" ] || { echo "install.sh: $bin/$file is missing; run without --no-build" >&2; exit 1; }
done
version=$("$bin/rawfx" --version)

manifest_dir="$prefix/share/rawfx"
manifest="$manifest_dir/install-manifest"
written=()
created=()  # directories this run made (ending in /), removed by uninstall.sh when empty
note_directories() {
    local dir
    dir=$(dirname "$1")
    while [ "$dir" != . ]; do
        [ -d "$prefix/$dir" ] || created+=("$dir/")
        dir=$(dirname "$dir")
    done
}
put() {  # put MODE SOURCE DESTINATION (relative to the prefix)
    note_directories "$3"
    install -D -m "$1" "$2" "$prefix/$3"
    written+=("$3")
}

include=Sources/CRawFX/include
put 644 "$include/rawfx.h" include/rawfx.h
put 644 "$include/rawfx/plugin_helpers.h" include/rawfx/plugin_helpers.h
for header in "$include"/rawfx/ext/*.h; do put 644 "$header" "include/rawfx/ext/$(basename "$header")"; done
put 644 Sources/CRawFXEmbed/include/rawfx_embed.h include/rawfx_embed.h
put 644 Sources/CRawFXEmbed/include/rawfx_hooks.h include/rawfx_hooks.h
put 644 Sources/CRawFXEmbed/include/rawfx/zoom_adapter.hpp include/rawfx/zoom_adapter.hpp
put 755 "$bin/libRawFXEmbed.so" lib/librawfx.so
for plugin in "${plugins[@]}"; do put 755 "$bin/$plugin" "lib/rawfx/plugins/$plugin"; done
put 755 "$bin/rawfx" bin/rawfx
# The isolated stages' helper (docs/isolation.md): found from bin/rawfx and lib/librawfx.so as
# ../libexec/rawfx/rawfx-isolate.
put 755 "$bin/rawfx-isolate" libexec/rawfx/rawfx-isolate

pc=$(mktemp)
source scripts/packaging.sh
rawfx_pc "$prefix" "$version" '-Wl,-rpath,${libdir}' > "$pc"
put 644 "$pc" lib/pkgconfig/rawfx.pc
rm -f "$pc"

note_directories share/rawfx/install-manifest
mkdir -p "$manifest_dir"
# A reinstall keeps the directories an earlier install created.
previous=()
[ -f "$manifest" ] && mapfile -t previous < <(grep '/$' "$manifest" || true)
printf '%s\n' "${written[@]}" share/rawfx/install-manifest "${previous[@]}" "${created[@]}" | sort -u > "$manifest"
chmod 644 "$manifest"
echo "install.sh: RawFX $version ($configuration) installed into $prefix ($((${#written[@]} + 1)) files; manifest $manifest)"
