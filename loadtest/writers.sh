#!/usr/bin/env bash
# How many group-commit writers suit single events at a given concurrency (issue 17's a/d):
# more writers overlap PostgreSQL's work with the collector's, and each takes a smaller group
# commit, whose fixed cost per statement then weighs on fewer events. Builds in release mode,
# starts a fresh PostgreSQL, then for ROUNDS (3) rounds starts a collector with each number of
# writers of WRITER_COUNTS ("1 2 3") in turn, warms it up, runs DURATION (8) seconds of
# BATCH-event requests (wrk, CONNECTIONS (64) connections, as `make bench`'s (a)) and stops it.
# Prints, per run: requests/s, p50 and p99, and the collector's and PostgreSQL's CPU per request
# (every process PostgreSQL started). The same database serves every run, each run appending
# to it; compare runs of one round, since the box's speed drifts between rounds.
# Figures, not a test: exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
BATCH=${BATCH:-1}
CONNECTIONS=${CONNECTIONS:-64}
DURATION=${DURATION:-8}
ROUNDS=${ROUNDS:-3}
WRITER_COUNTS=${WRITER_COUNTS:-"1 2 3"}

bench_name=writers
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
key=$(create_app writers writeKey)
load() {
    PT_KEY=$key PT_BATCH=$BATCH wrk -t2 -c"$CONNECTIONS" -d"$1"s -s loadtest/events.lua \
        "http://127.0.0.1:$http_port"
}
echo "writers: $BATCH-event requests, $CONNECTIONS connections, ${DURATION}s a run" >&2
printf '%-6s %-8s %12s %9s %9s %22s %22s\n' round writers requests/s "p50 ms" "p99 ms" \
    "collector µs/request" "PostgreSQL µs/request"
for round in $(seq "$ROUNDS"); do
    for writers in $WRITER_COUNTS; do
        start_server --writers "$writers"
        load 3 >/dev/null
        collector0=$(proc_cpu "$server_pid")
        pg0=$(pg_cpu)
        result=$(load "$DURATION" | grep '^RESULT')
        collector1=$(proc_cpu "$server_pid")
        pg1=$(pg_cpu)
        requests=$(field "$result" requests)
        printf '%-6s %-8s %12s %9s %9s %22.1f %22.1f\n' "$round" "$writers" \
            "$(field "$result" rps)" "$(field "$result" p50_ms)" "$(field "$result" p99_ms)" \
            "$(python3 -c "print(($collector1 - $collector0) / $requests * 1e6)")" \
            "$(python3 -c "print(($pg1 - $pg0) / $requests * 1e6)")"
        kill "$server_pid"
        wait "$server_pid" 2>/dev/null || true
        server_pid=
    done
done
