#!/usr/bin/env bash
# Fuzzes the request decoder and validator (fuzz/DecoderFuzzer.swift) with libFuzzer for a
# bounded time: scripts/fuzz.sh [SECONDS] (default 60).
#
# The seeds in fuzz/corpus/decoder/ (checked in) are read; what libFuzzer finds is kept in
# .data/fuzz-corpus/decoder/ (git-ignored) and reused on the next run. Crash inputs go to
# .data/fuzz-artifacts/; the script exits 1 when there is one.
#   FUZZ_UPDATE_CORPUS=1  also merge the coverage-increasing inputs into the checked-in corpus
#   FUZZ_JOBS=N           run N fuzzing processes in parallel (default 1)
# Reproduce a crash: .build/fuzz/decoder-fuzzer .data/fuzz-artifacts/crash-…
# Minimise it:       .build/fuzz/decoder-fuzzer -minimize_crash=1 -runs=10000 \
#                      -exact_artifact_path=/tmp/min .data/fuzz-artifacts/crash-…
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${1:-60}
[[ "$duration" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: SECONDS must be a positive integer, not '$duration'" >&2; exit 2; }
jobs=${FUZZ_JOBS:-1}
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: FUZZ_JOBS must be a positive integer, not '$jobs'" >&2; exit 2; }

# zlib headers for Gzip.swift, libcrypto's for SHA256.swift; the toolchain ships libFuzzer, ASan
# and lld itself.
scripts/deps.sh
swiftc=$(command -v swiftc) || { echo "fuzz: swiftc is not on PATH" >&2; exit 1; }
runtime=$("$swiftc" -print-target-info | sed -n 's/.*"runtimeResourcePath": "\(.*\)".*/\1/p')
if [[ -z "$(find "$runtime/clang/lib" -name 'libclang_rt.fuzzer*.a' -print -quit 2>/dev/null)" ]]; then
    echo "fuzz: this toolchain has no libFuzzer runtime (libclang_rt.fuzzer) under $runtime/clang" >&2
    exit 1
fi

binary=.build/fuzz/decoder-fuzzer
seeds=fuzz/corpus/decoder
corpus=.data/fuzz-corpus/decoder
artifacts=.data/fuzz-artifacts
mkdir -p "$(dirname "$binary")" "$corpus" "$artifacts"

# One module: the PushTrackCore sources (SHA256.swift over the CLibCrypto module map),
# HTTPServer's Gzip.swift (over the CZlib module map) and the harness, which so sees internal
# API. -O keeps the executions per second useful; the preconditions and Swift's own checks stay
# on.
sources=(Sources/PushTrackCore/*.swift Sources/HTTPServer/Gzip.swift fuzz/DecoderFuzzer.swift)
if [[ ! -x "$binary" ]] || [[ -n "$(find "${sources[@]}" -newer "$binary" -print -quit)" ]]; then
    echo "fuzz: building $binary" >&2
    "$swiftc" -sanitize=fuzzer,address -parse-as-library -O -module-name PushTrackFuzz \
        -use-ld=lld -I Sources/CZlib -I Sources/CLibCrypto -lz -lcrypto "${sources[@]}" \
        -o "$binary"
fi

# Swift's own crash backtracer would catch the trap first and hang under ASan: let libFuzzer
# handle the signal and save the input.
export SWIFT_BACKTRACE=enable=no
before=$(find "$artifacts" -type f | wc -l)
echo "fuzz: $duration s over $seeds (new inputs kept in $corpus), artifacts in $artifacts/" >&2
status=0
options=(-max_total_time="$duration" -max_len=65536 -timeout=5 -rss_limit_mb=2048
    -artifact_prefix="$artifacts/" -print_final_stats=1)
if ((jobs > 1)); then
    "$binary" "${options[@]}" -fork="$jobs" "$corpus" "$seeds" || status=$?
else
    "$binary" "${options[@]}" "$corpus" "$seeds" || status=$?
fi

if [[ "${FUZZ_UPDATE_CORPUS:-0}" == 1 ]]; then
    # Only inputs that add coverage to what the seeds already reach are copied in.
    "$binary" -merge=1 -max_len=65536 -timeout=5 "$seeds" "$corpus" 2>/dev/null
    echo "fuzz: $seeds holds $(find "$seeds" -type f | wc -l) files" >&2
fi

after=$(find "$artifacts" -type f | wc -l)
if ((status != 0 || after > before)); then
    echo "fuzz: FAILED (exit $status); new artifacts:" >&2
    find "$artifacts" -type f -newer "$binary" >&2
    exit 1
fi
echo "fuzz: no crash in $duration s" >&2
