# Sourced by scripts/install.sh, scripts/build-wheel.sh and scripts/build-deb.sh: what they share.

# rawfx_pc PREFIX VERSION [LIBS_EXTRA [LINK]]: rawfx.pc for an installation in PREFIX on stdout;
# LINK names the library (default -lrawfx; the wheel, which cannot hold the librawfx.so link,
# gives -l:librawfx.so.1).
rawfx_pc() {
    cat <<PC
prefix=$1
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include
plugindir=\${libdir}/rawfx/plugins

Name: RawFX
Description: Frame-effects engine for video SDK raw-data hooks: the plugin ABI (rawfx.h) and the embedding API (rawfx_embed.h, librawfx)
Version: $2
Cflags: -I\${includedir}
Libs: -L\${libdir} ${4:--lrawfx}${3:+ $3}
PC
}

# package_arguments NAME "$@": the packagers' options, --no-build and --output DIR, into $build
# and $output; then runs scripts/build-release.sh unless --no-build, and checks the stage is there
# ($stage). -h prints the calling script's header (its lines 2 to the first blank comment).
package_arguments() {
    local name=$1
    shift
    build=1
    output=dist
    while [ $# -gt 0 ]; do
        case "$1" in
            --no-build) build=0; shift ;;
            --output) output=${2:?--output needs a directory}; shift 2 ;;
            -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
            *) echo "$name: unknown argument '$1'; expected --no-build or --output DIR" >&2; exit 2 ;;
        esac
    done
    if [ "$build" = 1 ]; then scripts/build-release.sh; fi
    stage=.build-release/stage
    [ -f "$stage/lib/librawfx.so.1" ] && [ -f "$stage/VERSION" ] ||
        { echo "$name: $stage is not staged; run scripts/build-release.sh (or drop --no-build)" >&2; exit 1; }
}
