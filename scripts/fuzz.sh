#!/usr/bin/env bash
# Builds the libFuzzer harnesses of Fuzz/ (with AddressSanitizer) and runs them.
#
#   scripts/fuzz.sh                  every target, 60 s each
#   scripts/fuzz.sh FuzzY4M 600      one target, 10 minutes
#
# Targets: FuzzY4M FuzzWAV FuzzWatermarkPNG FuzzChain FuzzPluginDescriptors FuzzIsolationProtocol
# (docs/fuzzing.md). Each starts from
# its seed corpus in Fuzz/Corpus/<name> (read only: new inputs go to a scratch folder) and
# stops at the first crash, leaving the input as crash-* in $RAWFX_FUZZ_ARTIFACTS (default
# .build/fuzz-artifacts). The exit status is non-zero if any target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."

all=(FuzzY4M FuzzWAV FuzzWatermarkPNG FuzzChain FuzzPluginDescriptors FuzzIsolationProtocol)
targets=("${1:-all}")
[[ ${targets[0]} == all ]] && targets=("${all[@]}")
seconds=${2:-60}
build=${RAWFX_FUZZ_BUILD:-$PWD/.build/fuzz}
artifacts=${RAWFX_FUZZ_ARTIFACTS:-$PWD/.build/fuzz-artifacts}

corpus_of() {
    case $1 in
        FuzzY4M) echo y4m ;; FuzzWAV) echo wav ;; FuzzWatermarkPNG) echo watermark-png ;; FuzzChain) echo chain ;;
        FuzzPluginDescriptors) echo plugin-descriptors ;; FuzzIsolationProtocol) echo isolation ;;
        *) echo "fuzz.sh: unknown target '$1' (expected one of: ${all[*]})" >&2; exit 2 ;;
    esac
}
for t in "${targets[@]}"; do corpus_of "$t" >/dev/null; done

# gold fails on these objects (an internal error while reporting): link with lld.
mkdir -p "$build"
if ! (cd Fuzz && swift build -c debug --build-path "$build" -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld \
        >"$build/build.log" 2>&1); then
    grep -v "Cannot export local symbol" "$build/build.log" >&2
    exit 1
fi
bin=$(cd Fuzz && swift build -c debug --build-path "$build" --show-bin-path)
mkdir -p "$artifacts"
status=0
for t in "${targets[@]}"; do
    [[ -x $bin/$t ]] || { echo "fuzz.sh: $bin/$t was not built" >&2; exit 1; }
    scratch=$(mktemp -d)
    echo "== $t: ${seconds}s from Fuzz/Corpus/$(corpus_of "$t")"
    # rss_limit: a frame buffer is at most 16 MiB in the harness, libpng's chunks 8 MB.
    # No Swift backtracer: its memory reader trips AddressSanitizer and hides the real report.
    # The target's own exit status (not grep's, not the `if`'s: under pipefail an `if !`
    # around the pipe reset PIPESTATUS to the `then` branch's 0, and a crash passed).
    set +e
    SWIFT_BACKTRACE=enable=no "$bin/$t" "$scratch" "Fuzz/Corpus/$(corpus_of "$t")" -max_total_time="$seconds" -rss_limit_mb=2048 \
        -max_len=262144 -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/$t-" 2>&1 \
        | grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::(number_of_executed_units|peak_rss_mb)|ERROR|SUMMARY|Test unit written|^==[0-9]+==|oracle|Fatal error"
    target_status=${PIPESTATUS[0]}
    set -e
    [[ $target_status -eq 0 ]] || status=1
    rm -rf "$scratch"
done
exit $status
