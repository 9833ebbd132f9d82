#!/usr/bin/env bash
# What stalls the batch p99 at half rate besides the folds (issue 17; loadtest/README.md, "What
# else sets (hb)"): builds in release mode, starts a fresh PostgreSQL and a collector, runs
# bench.sh's (a) and (b) flat out, then (hb), 50-event batches offered at half of (b)'s rate (or
# HB_RATE requests/s) for DURATION seconds after SETTLE, with PostgreSQL logging every statement
# over SLOW_MS, and the kernel's dirty page cache (/proc/meminfo) sampled every 0.25 s. Prints
# (hb)'s latency, the dirty cache's peak and its largest write-back between two samples (the
# kernel writes a data file back about 30 s after it was first dirtied, all of it at once, and
# the commits' WAL flushes wait behind that), and the statements that passed SLOW_MS during (hb),
# by kind: COMMIT (a WAL flush stalled), the compactor's folds, anything else.
# Environment: DURATION (10), SETTLE (2), HB_RATE (half of (b)), SLOW_MS (30), and fresh.sh's
# PG_SETTINGS and SERVER_FLAGS (a setting or flag to try). Figures, not a test: exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
SETTLE=${SETTLE:-2}
SLOW_MS=${SLOW_MS:-30}

bench_name=writeback
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
key=$(create_app writeback writeKey)
start_server
psql "$DATABASE_URL" -qc "ALTER SYSTEM SET log_min_duration_statement = $SLOW_MS" \
    -c "SELECT pg_reload_conf()" >/dev/null

echo "writeback: (a) single events, then (b) 50-event batches, ${DURATION}s each" >&2
run_wrk 1 0 3 >/dev/null
a=$(run_wrk 1 0 "$DURATION")
b=$(run_wrk 50 0 "$DURATION")
rate=${HB_RATE:-$(half_rate "$b")}
echo "writeback: (hb) 50-event batches at $rate req/s, ${DURATION}s after ${SETTLE}s" >&2
run_wrk 50 "$rate" "$SETTLE" >/dev/null
: >"$work/pg/server.log"
(
    end=$((SECONDS + DURATION))
    while ((SECONDS < end)); do
        dirty_kb
        sleep 0.25
    done
) >"$work/dirty.txt" &
sampler=$!
hb=$(run_wrk 50 "$rate" "$DURATION")
wait "$sampler" || true

python3 - "$a" "$b" "$hb" "$work/pg/server.log" "$SLOW_MS" <<'PY'
import collections, re, sys
a, b, hb = ({k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", line)} for line in sys.argv[1:4])
slow = collections.defaultdict(list)
for duration, statement in re.findall(r"duration: ([\d.]+) ms  (?:execute [^:]*|statement): (.*)",
                                      open(sys.argv[4]).read()):
    kind = ("COMMIT" if statement.strip() == "COMMIT"
            else "compactor's folds" if "pushtrack_compact" in statement else "other statements")
    slow[kind].append(float(duration))
print(f"(a) {a['rps']:,.0f} requests/s; (b) {b['rps'] * 50:,.0f} events/s")
print(f"(hb) at {hb['rps']:,.0f} requests/s: p50 {hb['p50_ms']:.2f} ms, "
      f"p99 {hb['p99_ms']:.2f} ms, slowest {hb['max_ms']:.2f} ms")
for kind in ("COMMIT", "compactor's folds", "other statements"):
    times = slow.get(kind, [])
    longest = f", longest {max(times):.1f} ms" if times else ""
    print(f"{kind} over {sys.argv[5]} ms during (hb): {len(times)}{longest}")
PY
echo "during (hb): $(dirty_summary "$work/dirty.txt")"
