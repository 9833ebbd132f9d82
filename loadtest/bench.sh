#!/usr/bin/env bash
# The ingestion benchmark (issue 3): builds in release mode, starts a fresh PostgreSQL, and in
# one run measures
#   (a) single-event requests/s and (b) events/s in 50-event batches, 64 connections, wrk;
#       acknowledgement latency p50/p99 and the server's peak RSS;
#   (h) p99 at half of (a)'s rate, run after (a) (the same single events), before (b);
#   (hb) p99 of 50-event batches at half of (b)'s rate, run after (b);
#   each half-rate figure is measured after SETTLE seconds at that rate: the steady state, not
#   the drain of the flat-out run before it (its queued requests and the fold of its last
#   second, about 80 slow requests in the first 0.2 s of a batch run: 2 % of it, alone above
#   the 1 % a p99 allows);
#   (c) COPY of the same events into the same raw table (psql \copy), rows/s;
#   (d) pgbench, one INSERT … ON CONFLICT DO NOTHING per transaction, 8 clients, tps;
# and prints the ratios b/c and a/d against the targets. Figures, not a test: it exits 0.
# Environment: DURATION (seconds per wrk run, 10), SETTLE (2), CONNECTIONS (64), COPY_ROWS (200000),
# CONVERSION (a category to declare for the app before the load: the same load, with the
# writers tracking conversions; unset: none).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
SETTLE=${SETTLE:-2}
CONNECTIONS=${CONNECTIONS:-64}
COPY_ROWS=${COPY_ROWS:-200000}

bench_name=bench
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
app_json=$("$bin" app create bench --format json)
key=$(json_field writeKey <<<"$app_json")

start_server
declare_conversion "$(json_field appId <<<"$app_json")"


echo "bench: warming up" >&2
run_wrk 1 0 3 >/dev/null
echo "bench: (a) single events, $CONNECTIONS connections, ${DURATION}s" >&2
a=$(run_wrk 1 0 "$DURATION")
# Half of (a)'s rate, offered on a fixed schedule whatever the latency.
target=$(half_rate "$a")
echo "bench: (h) single events paced to half of (a) ($target req/s), ${DURATION}s after ${SETTLE}s" >&2
run_wrk 1 "$target" "$SETTLE" >/dev/null
h=$(run_wrk 1 "$target" "$DURATION")
echo "bench: (b) 50-event batches, $CONNECTIONS connections, ${DURATION}s" >&2
b=$(run_wrk 50 0 "$DURATION")
half_b=$(half_rate "$b")
echo "bench: (hb) 50-event batches paced to half of (b) ($half_b req/s), ${DURATION}s after ${SETTLE}s" >&2
run_wrk 50 "$half_b" "$SETTLE" >/dev/null
# What PostgreSQL and the kernel did by themselves while (hb) ran, the usual suspects of a stall
# in its p99: checkpoints begun, autovacuum or autoanalyze workers seen (sampled every 0.5 s),
# the WAL written since fresh.sh made 2 GB of segments ready (past that, each new segment is
# created while commits wait), and the kernel's dirty page cache (sampled with them): the data
# files PostgreSQL wrote stay dirty until the kernel writes them back, up to 30 s later and
# all at once, and the commits' WAL flushes wait behind that burst (loadtest/README.md).
marks() {
    psql "$DATABASE_URL" -tA -F' ' -c "SELECT (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter), pg_current_wal_lsn() - '0/0'"
}
hb_before=$(marks)
(
    end=$((SECONDS + DURATION))
    while ((SECONDS < end)); do
        psql "$DATABASE_URL" -tAc "SELECT regexp_replace(query, '^autovacuum: ', '') FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' AND query <> ''"
        dirty_kb >>"$work/dirty.txt"
        sleep 0.5
    done
) >"$work/autovacuum.txt" 2>/dev/null &
sampler=$!
hb=$(run_wrk 50 "$half_b" "$DURATION")
wait "$sampler" || true
hb_after=$(marks)
dirty=$(dirty_summary "$work/dirty.txt")
hb_background=$(python3 - "$hb_before" "$hb_after" "$wal_ready_lsn" "$work/autovacuum.txt" "$dirty" <<'PY'
import collections, sys
(c0, _), (c1, w1) = (map(int, m.split()) for m in sys.argv[1:3])
seen = collections.Counter(line.strip() for line in open(sys.argv[4]) if line.strip())
vacuums = ", ".join(f"{q} ({n / 2:g} s)" for q, n in seen.most_common()) or "none"
print(f"{c1 - c0} checkpoints begun; autovacuum seen: {vacuums}; "
      f"WAL since the segments were made ready {(w1 - int(sys.argv[3])) / 2**20:,.0f} MB of 2,048; "
      f"{sys.argv[5]}")
PY
)
rss_kb=$(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status")
kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""
stored=$(psql "$DATABASE_URL" -tAc "SELECT count(*) FROM events")

echo "bench: (c) COPY of $COPY_ROWS events into the raw table" >&2
events_csv "$work/events.csv" "$COPY_ROWS"
copy_start=$(date +%s.%N)
copy_events "$work/events.csv"
copy_end=$(date +%s.%N)

echo "bench: (d) pgbench, INSERT … ON CONFLICT DO NOTHING, 8 clients, ${DURATION}s" >&2
d_tps=$(pgbench_insert "$DURATION")

python3 - "$a" "$b" "$h" "$hb" "$rss_kb" "$COPY_ROWS" "$copy_start" "$copy_end" "$d_tps" "$stored" "$hb_background" <<'PY'
import sys
def parse(line):
    return {k: float(v) for k, v in (p.split("=") for p in line.split()[1:])}
a, b, h, hb = (parse(arg) for arg in sys.argv[1:5])
rss_mb = int(sys.argv[5]) / 1024
copy_rows, copy_s = int(sys.argv[6]), float(sys.argv[8]) - float(sys.argv[7])
c = copy_rows / copy_s
d = float(sys.argv[9])
stored = int(sys.argv[10])
b_events = b["rps"] * 50
rows = [
    ("(a) single-event requests/s", f"{a['rps']:,.0f}", f"p50 {a['p50_ms']:.2f} ms, p99 {a['p99_ms']:.2f} ms, errors {a['errors']:.0f}"),
    ("(b) events/s, 50-event batches", f"{b_events:,.0f}", f"{b['rps']:,.0f} req/s, p50 {b['p50_ms']:.2f} ms, p99 {b['p99_ms']:.2f} ms, errors {b['errors']:.0f}"),
    ("(h) p99 at half of (a)", f"{h['p99_ms']:.2f} ms", f"paced to {a['rps'] / 2:,.0f} req/s, ran at {h['rps']:,.0f}, p50 {h['p50_ms']:.2f} ms"),
    ("(hb) batch p99 at half of (b)", f"{hb['p99_ms']:.2f} ms", f"paced to {b['rps'] / 2:,.0f} req/s, ran at {hb['rps']:,.0f}, p50 {hb['p50_ms']:.2f} ms"),
    ("server peak RSS", f"{rss_mb:.1f} MB", "VmHWM over (a), (h), (b), (hb)"),
    ("(c) COPY rows/s (baseline)", f"{c:,.0f}", f"{copy_rows:,} rows in {copy_s:.2f} s"),
    ("(d) pgbench tps (baseline)", f"{d:,.0f}", "8 clients, one INSERT … ON CONFLICT per transaction"),
    ("events stored by (a), (h), (b), (hb)", f"{stored:,}", ""),
    ("background work in (hb)", "", sys.argv[11]),
]
print()
print(f"{'figure':34} {'value':>12}  notes")
for name, value, note in rows:
    print(f"{name:34} {value:>12}  {note}")
targets = [
    ("b/c", b_events / c, ">= 0.5", b_events / c >= 0.5),
    ("a/d", a["rps"] / d, ">= 2", a["rps"] / d >= 2),
    ("p99 at half rate (ms)", h["p99_ms"], "<= 25", h["p99_ms"] <= 25),
    ("batch p99 at half (ms)", hb["p99_ms"], "<= 25", hb["p99_ms"] <= 25),
    ("peak RSS (MB)", rss_mb, "<= 200", rss_mb <= 200),
]
print()
print(f"{'target':24} {'measured':>10}  {'goal':8} result")
for name, value, goal, ok in targets:
    print(f"{name:24} {value:>10.2f}  {goal:8} {'pass' if ok else 'FAIL'}")
# For `make bench` (loadtest/bench_all.sh): one row per figure, tab-separated:
# benchmark, figure, measured, baseline, ratio, target, result.
import os
summary = os.environ.get("BENCH_SUMMARY")
if summary:
    verdict = lambda ok: "pass" if ok else "FAIL"
    with open(summary, "a") as out:
        for row in [
            ("ingestion", "(a) single-event requests/s", f"{a['rps']:,.0f}", f"(d) pgbench {d:,.0f} tps", f"a/d {a['rps'] / d:.2f}", "a/d >= 2", verdict(targets[1][3])),
            ("ingestion", "(b) events/s, 50-event batches", f"{b_events:,.0f}", f"(c) COPY {c:,.0f} rows/s", f"b/c {b_events / c:.2f}", "b/c >= 0.5", verdict(targets[0][3])),
            ("ingestion", "(h) p99 at half of (a)", f"{h['p99_ms']:.2f} ms", "", "", "<= 25 ms", verdict(targets[2][3])),
            ("ingestion", "(hb) batch p99 at half of (b)", f"{hb['p99_ms']:.2f} ms", "", "", "<= 25 ms", verdict(targets[3][3])),
            ("ingestion", "server peak RSS", f"{rss_mb:.1f} MB", "", "", "<= 200 MB", verdict(targets[4][3])),
        ]:
            out.write("\t".join(row) + "\n")
PY
