#!/usr/bin/env bash
# Does ingestion grow with cores, and do the baselines? (issues 3 and 4: this machine has two,
# shared by PostgreSQL, the collector and wrk.) Builds in release mode, starts a fresh
# PostgreSQL and, for each CPU set of CPU_SETS ("0", then "0,1"), restarts PostgreSQL, the
# collector and every client pinned to it (taskset) and measures, as loadtest/bench.sh does,
#   (a) single-event requests/s and (b) events/s in 50-event batches (wrk, 64 connections),
#   (c) COPY rows/s into the raw table and (d) pgbench tps (8 clients, INSERT … ON CONFLICT);
# then prints each figure per CPU set, how much it grew, and b/c and a/d per CPU set.
# Figures, not a test: exits 0. Environment: DURATION (10), COPY_ROWS (200000), CPU_SETS.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
COPY_ROWS=${COPY_ROWS:-200000}
CPU_SETS=${CPU_SETS:-0 0,1}

bench_name=scaling
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
command -v taskset >/dev/null || { echo "scaling: taskset (util-linux) is missing" >&2; exit 1; }
key=$(create_app scaling writeKey)
events_csv "$work/events.csv" "$COPY_ROWS"

results=""
for cpus in $CPU_SETS; do
    pin="taskset -c $cpus"
    scripts/pg.sh stop "$work/pg" >/dev/null
    $pin scripts/pg.sh start "$work/pg" "$pg_port" >/dev/null
    start_server --log-level warning
    echo "scaling: CPUs $cpus: (a), (b), (c), (d)" >&2
    run_wrk 1 0 3 >/dev/null
    a=$(field "$(run_wrk 1 0 "$DURATION")" rps)
    b=$(field "$(run_wrk 50 0 "$DURATION")" rps)
    kill "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
    copy_start=$(date +%s.%N)
    copy_events "$work/events.csv"
    copy_end=$(date +%s.%N)
    d=$(pgbench_insert "$DURATION")
    results+="$cpus $a $b $copy_start $copy_end $d"$'\n'
done
pin=""

python3 - "$COPY_ROWS" "$results" <<'PY'
import sys
rows = int(sys.argv[1])
runs = []
for line in sys.argv[2].strip().splitlines():
    cpus, a, b, start, end, d = line.split()
    runs.append((cpus, float(a), float(b) * 50, rows / (float(end) - float(start)), float(d)))
print()
print(f"{'CPUs':8} {'(a) req/s':>10} {'(b) events/s':>13} {'(c) COPY rows/s':>16} {'(d) pgbench tps':>16} {'b/c':>6} {'a/d':>6}")
for cpus, a, b, c, d in runs:
    print(f"{cpus:8} {a:>10,.0f} {b:>13,.0f} {c:>16,.0f} {d:>16,.0f} {b / c:>6.2f} {a / d:>6.2f}")
if len(runs) > 1:
    first, last = runs[0], runs[-1]
    growth = [last[i] / first[i] for i in range(1, 5)]
    print(f"{'growth':8} " + " ".join(f"{g:>{w}.2f}x" for g, w in zip(growth, (9, 12, 15, 15))))
PY
