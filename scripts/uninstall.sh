#!/usr/bin/env bash
# Removes what scripts/install.sh wrote into a prefix, as its manifest lists it: the files,
# and the directories it created if they are empty; nothing else.
#
#   scripts/uninstall.sh [--prefix DIR]      (default /usr/local)
set -euo pipefail

prefix=/usr/local
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
        --prefix=*) prefix=${1#--prefix=}; shift ;;
        -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
        *) echo "uninstall.sh: unknown argument '$1'; expected --prefix DIR" >&2; exit 2 ;;
    esac
done
manifest="$prefix/share/rawfx/install-manifest"
[ -f "$manifest" ] || { echo "uninstall.sh: no RawFX installed in $prefix ($manifest not found)" >&2; exit 1; }

mapfile -t entries < "$manifest"
removed=0
directories=()
for entry in "${entries[@]}"; do
    case "$entry" in ''|/*|*..*) echo "uninstall.sh: refusing manifest entry '$entry'" >&2; exit 1 ;; esac
    case "$entry" in
        */) directories+=("${entry%/}") ;;
        *) if [ -e "$prefix/$entry" ] || [ -L "$prefix/$entry" ]; then rm -f "$prefix/$entry"; removed=$((removed + 1)); fi ;;
    esac
done
# The directories install.sh created, deepest first, if nothing else has been put in them.
if [ ${#directories[@]} -gt 0 ]; then
    printf '%s\n' "${directories[@]}" | sort -r | while read -r dir; do rmdir "$prefix/$dir" 2>/dev/null || true; done
fi
echo "uninstall.sh: removed $removed files from $prefix"
