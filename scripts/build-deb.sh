#!/usr/bin/env bash
# The Debian package for bot machines: dist/rawfx_<version>_amd64.deb (dpkg-deb), from the tree
# scripts/build-release.sh stages (Swift runtime linked in statically: no toolchain needed).
#   /usr/bin/rawfx                         the command
#   /usr/lib/librawfx.so.1                 the engine behind the C API (SONAME librawfx.so.1)
#   /usr/lib/librawfx.so                   the development link to it (-lrawfx)
#   /usr/lib/rawfx/plugins/*.so            the shipped plugins
#   /usr/libexec/rawfx/rawfx-isolate       the isolated stages' helper
#   /usr/include/rawfx.h, rawfx_embed.h, rawfx_hooks.h, rawfx/...   the headers
#   /usr/lib/pkgconfig/rawfx.pc            pkg-config --cflags --libs rawfx
#   /usr/share/doc/rawfx/                  copyright, changelog
# The engine needs no configuration for this layout: the installed rawfx and librawfx look for
# the plugins in ../lib/rawfx/plugins from bin/ and in rawfx/plugins beside the library, and for
# the helper in ../libexec/rawfx from either (docs/embedding.md). Depends: what dpkg-shlibdeps
# reads off the files (libc6, libstdc++6, libgcc-s1, libyuv0, libspeexdsp1, libpng16-16,
# libfreetype6, libharfbuzz0b, ...), plus fonts-dejavu-core, the text filter's default font (its
# fallbacks, fonts-noto-core and a CJK font, are recommended: docs/plugins/text.md).
#
#   scripts/build-deb.sh [--no-build] [--output DIR]
# --no-build packages the tree an earlier scripts/build-release.sh staged; --output defaults to dist/.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/packaging.sh
package_arguments build-deb.sh "$@"
version=$(cat "$stage/VERSION")
[[ $version =~ ^[0-9][0-9A-Za-z.+~-]*$ ]] || { echo "build-deb.sh: '$version' (rawfx --version) is no Debian version" >&2; exit 1; }

umask 022
root=.build-release/deb
rm -rf "$root"
usr="$root/usr"
install -D -m 755 "$stage/bin/rawfx" "$usr/bin/rawfx"
install -D -m 644 "$stage/lib/librawfx.so.1" "$usr/lib/librawfx.so.1"
ln -s librawfx.so.1 "$usr/lib/librawfx.so"
mkdir -p "$usr/lib/rawfx/plugins"
for plugin in "$stage"/lib/rawfx/plugins/*.so; do install -m 644 "$plugin" "$usr/lib/rawfx/plugins/"; done
install -D -m 755 "$stage/libexec/rawfx/rawfx-isolate" "$usr/libexec/rawfx/rawfx-isolate"
cp -r "$stage/include" "$usr/include"
mkdir -p "$usr/lib/pkgconfig"
rawfx_pc /usr "$version" > "$usr/lib/pkgconfig/rawfx.pc"
chmod 644 "$usr/lib/pkgconfig/rawfx.pc"

doc="$usr/share/doc/rawfx"
mkdir -p "$doc"
cat > "$doc/copyright" <<'COPYRIGHT'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: RawFX
Comment: The Swift standard library, Foundation and Dispatch are linked into the binaries
 statically; they are Apache-2.0 with Runtime Library Exception (https://swift.org/LICENSE.txt).

Files: *
Copyright: 2026 RawFX maintainers
License: proprietary
 All rights reserved by the RawFX maintainers until a licence is chosen.
COPYRIGHT
date=$(git log -1 --format=%aD 2>/dev/null || date -R)
printf 'rawfx (%s) unstable; urgency=medium\n\n  * Release %s, built by scripts/build-deb.sh.\n\n -- RawFX maintainers <maintainers@rawfx.invalid>  %s\n' \
    "$version" "$version" "$date" | gzip -9n > "$doc/changelog.gz"
chmod 644 "$doc/copyright" "$doc/changelog.gz"

# Depends: dpkg-shlibdeps reads the libraries each file needs (it wants a debian/control).
shlib_dir=$(mktemp -d)
trap 'rm -rf "$shlib_dir"' EXIT
mkdir -p "$shlib_dir/debian"
printf 'Source: rawfx\n\nPackage: rawfx\nArchitecture: amd64\n' > "$shlib_dir/debian/control"
elf_files=("$usr/bin/rawfx" "$usr/lib/librawfx.so.1" "$usr/libexec/rawfx/rawfx-isolate" "$usr"/lib/rawfx/plugins/*.so)
abs_files=()
for file in "${elf_files[@]}"; do abs_files+=("$(readlink -f "$file")"); done
depends=$(cd "$shlib_dir" && dpkg-shlibdeps -O "${abs_files[@]}" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "build-deb.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

mkdir -p "$root/DEBIAN"
installed_size=$(du -sk --apparent-size "$usr" | cut -f1)
cat > "$root/DEBIAN/control" <<CONTROL
Package: rawfx
Version: $version
Architecture: amd64
Maintainer: RawFX maintainers <maintainers@rawfx.invalid>
Installed-Size: $installed_size
Depends: $depends, fonts-dejavu-core
Recommends: fonts-noto-core
Section: libs
Priority: optional
Description: frame-effects engine for video SDK raw-data hooks
 RawFX runs chains of filters (watermark, text, scale, rotate, denoise, resample)
 on I420 video and 16-bit PCM at the raw-data hooks of video SDKs. This
 package holds the rawfx command, the embedding library librawfx (C API,
 headers, pkg-config file), the shipped filter plugins and the helper of
 isolated stages.
CONTROL
echo "librawfx 1 rawfx (>= $version)" > "$root/DEBIAN/shlibs"
echo "activate-noawait ldconfig" > "$root/DEBIAN/triggers"
(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 644 "$root/DEBIAN/"*

mkdir -p "$output"
deb="$output/rawfx_${version}_amd64.deb"
dpkg-deb --root-owner-group -Zgzip --build "$root" "$deb" > /dev/null
echo "build-deb.sh: $deb ($(du -h "$deb" | cut -f1)); Depends: $depends"
