#!/usr/bin/env bash
# The Python wheel for bot machines: dist/rawfx-<version>-py3-none-linux_x86_64.whl, the rawfx
# package (python/) with, under rawfx/_native/, what scripts/build-release.sh stages (librawfx.so.1,
# the plugins, the helper rawfx-isolate, the rawfx command, the headers) and the libraries they
# need beyond glibc, libstdc++ and libgcc_s (libyuv, libjpeg, SpeexDSP, libpng, zlib: a python
# image has none of them), found through $ORIGIN RUNPATHs. `pip install` of it into any venv
# gives a working `import rawfx`: no environment variable, no build, no Swift toolchain.
#
#   scripts/build-wheel.sh [--no-build] [--output DIR]
# --no-build packages the tree an earlier scripts/build-release.sh staged (CI builds once for the
# wheel and the .deb); --output defaults to dist/.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/packaging.sh
package_arguments build-wheel.sh "$@"

native=.build-release/wheel-native
rm -rf "$native"
cp -a "$stage" "$native"
rm -f "$native/VERSION"
# What a Debian or python image has anyway (glibc, the C++ runtime); everything else is bundled.
base='^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux-x86-64)\.so'
binaries=("$native/bin/rawfx" "$native/lib/librawfx.so.1" "$native/libexec/rawfx/rawfx-isolate" "$native"/lib/rawfx/plugins/*.so)
bundled=()
sources=()
for file in "${binaries[@]}"; do
    while read -r name path; do
        [[ $name =~ $base ]] && continue
        [ -f "$native/lib/$name" ] && continue
        [ -f "$path" ] || { echo "build-wheel.sh: $file needs $name, not found on this machine" >&2; exit 1; }
        install -m 644 "$path" "$native/lib/$name"
        strip --strip-unneeded "$native/lib/$name"
        bundled+=("$name")
        sources+=("$(readlink -f "$path")")
    done < <(ldd "$file" | awk '$2 == "=>" {print $1, $3}')
done
# Each bundled library's own copyright notice (Debian's, from its package).
mkdir -p "$native/licenses"
for source in "${sources[@]}"; do
    package=$(dpkg -S "$source" 2>/dev/null | head -1 | cut -d: -f1 || true)
    if [ -n "$package" ] && [ -f "/usr/share/doc/$package/copyright" ]; then
        install -m 644 "/usr/share/doc/$package/copyright" "$native/licenses/$package.copyright"
    fi
done
for name in "${bundled[@]}"; do patchelf --set-rpath '$ORIGIN' "$native/lib/$name"; done
patchelf --set-rpath '$ORIGIN' "$native/lib/librawfx.so.1"
patchelf --set-rpath '$ORIGIN/../lib' "$native/bin/rawfx"
patchelf --set-rpath '$ORIGIN/../../lib' "$native/libexec/rawfx/rawfx-isolate"
for plugin in "$native"/lib/rawfx/plugins/*.so; do patchelf --set-rpath '$ORIGIN/../..' "$plugin"; done

# A relocatable rawfx.pc (pkg-config's ${pcfiledir}): a C or C++ host builds against the wheel's
# headers and library with PKG_CONFIG_PATH=<site-packages>/rawfx/_native/lib/pkgconfig.
mkdir -p "$native/lib/pkgconfig"
rawfx_pc '${pcfiledir}/../..' "$(cat "$stage/VERSION")" '-Wl,-rpath,${libdir}' -l:librawfx.so.1 > "$native/lib/pkgconfig/rawfx.pc"
chmod 644 "$native/lib/pkgconfig/rawfx.pc"

mkdir -p "$output"
wheel=$(python3 python/_build/rawfx_build.py native-wheel "$native" "$output")
echo "build-wheel.sh: $wheel ($(du -h "$wheel" | cut -f1)); bundled: ${bundled[*]:-nothing}"
