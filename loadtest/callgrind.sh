#!/usr/bin/env bash
# The collector's instruction count per event (valgrind's callgrind: it counts instructions, not
# seconds, so the figure repeats whatever else the machine does). Builds in release mode, starts
# a fresh PostgreSQL and `pushtrack serve` under callgrind, posts REQUESTS (240) requests of
# BATCH (50) events one after another, stops the server and prints the total and the
# instructions per event, then the costliest functions (inclusive). The output file stays in
# .data/callgrind/ for callgrind_annotate. Figures, not a test.
# Environment: REQUESTS (240), BATCH (50; 1 = single-event requests), CONNECTIONS (1: one
# request after another, so each group commit holds one; 16: that many in flight, so commits
# hold several requests as under load), CONVERSION (a category to declare for the app first:
# the writers then track its devices; unset: none).
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${REQUESTS:-240}
BATCH=${BATCH:-50}
CONNECTIONS=${CONNECTIONS:-1}

bench_name=callgrind
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
app_json=$("$bin" app create callgrind --format json)
key=$(json_field writeKey <<<"$app_json")
mkdir -p .data/callgrind
out=".data/callgrind/collector-${BATCH}x${REQUESTS}x${CONNECTIONS}${CONVERSION:+-$CONVERSION}.out"

# Debian 12's valgrind (3.19) cannot read the DWARF 5 debug information this toolchain writes
# ("unhandled dwarf2 abbrev form code 0x25", then it gives up), so it runs a copy without it: the
# same code, its functions named from the symbol table.
profiled="$work/pushtrack"
objcopy --strip-debug "$bin" "$profiled"
valgrind --tool=callgrind --callgrind-out-file="$out" "$profiled" serve --port "$http_port" \
    --bind 127.0.0.1 --log-level warning 2>>"$work/server.log" &
server_pid=$!
for _ in $(seq 600); do curl -sf "localhost:$http_port/readyz" >/dev/null && break; sleep 0.1; done
declare_conversion "$(json_field appId <<<"$app_json")"
python3 loadtest/callgrind_client.py "$http_port" "$key" "$REQUESTS" "$BATCH" "$CONNECTIONS"
kill -INT "$server_pid"
wait "$server_pid" || true
server_pid=""

total=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
events=$((REQUESTS * BATCH))
echo
python3 -c "print(f'callgrind: $REQUESTS requests of $BATCH events: {$total:,} instructions in all (startup included), {$total // $events:,} per event')"
echo "costliest functions of the collector (inclusive):"
callgrind_annotate --inclusive=yes "$out" 2>/dev/null | grep -F "[$profiled]" |
    swift demangle --simplified | grep -E '(IngestBatch|IngestWriter|IngestRoute|EventDecoder|Postgres|RollupDeltas|EventRows|accessHandler)' |
    awk 'NR <= 15' | sed -E 's/ \[.*//; s/\?\?\?://' | cut -c1-150
echo "(the whole profile: callgrind_annotate $out | swift demangle --simplified)"
