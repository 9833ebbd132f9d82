#!/usr/bin/env bash
# The cost curve (issue 17): does ingestion stay as cheap once the database holds a lot? Builds in
# release mode and starts a fresh PostgreSQL, then in one run
#   (1) ingests DURATION seconds of BATCH-event requests (wrk, 64 connections,
#       loadtest/events.lua, an app of its own) into the empty database: events/s;
#   (2) loads the stored state with SQL, not HTTP (loadtest/cost_state.sh, load_stored_state):
#       the report benchmark's campaign at DELIVERIES
#       deliveries (loadtest/report_bench.sql, with its aggregates and raw events, in an app of
#       its own: it declares a conversion category, which would change the load's path) and, in
#       the load's own app, 1,980 other messages of PER_MESSAGE deliveries to the load's devices
#       (loadtest/cost_curve.sql), a report key (a random UUID eventId, as the load's) for every
#       stored report; by default 20 M reports in the raw log and the keys, 2,000 messages.
#       Every index is keyed by app first, so state stored under another app would leave the
#       load's inserts in a corner of each index of their own, as on an empty database;
#   (3) after a checkpoint and a sync (and with PREWARM=1, the indexes ingestion writes read
#       into the buffers: loadtest/cost_state.sh, prewarm_ingestion_indexes), ingests the same
#       load again on top of it: events/s, and the ratio to (1);
#   (4) times REQUESTS campaign reports of the benchmark campaign (median, p90);
# and prints the two targets: (3)/(1) >= 0.8 and the report median <= 20 ms.
# PostgreSQL runs with shared_buffers at a quarter of the memory, in huge pages (below). For each
# run it prints PostgreSQL's and the collector's CPU per event too, and the blocks PostgreSQL read
# into its buffers per event. Figures, not a test:
# it exits 0. Environment: PG_SETTINGS (loadtest/fresh.sh), DURATION (20), BATCH (50), DELIVERIES
# (10,000,000), PER_MESSAGE (2,600), REQUESTS (100), HUGE_PAGES (1, below), PREWARM (0, above),
# TRUNCATE_DELTAS (1, loadtest/cost_state.sh), STATEMENTS (0; 1: PostgreSQL's CPU by statement
# in (1) and (3) side by side, loadtest/statement_stats.py).
# Loading the default state takes some 15 minutes on the 2-core machine; DELIVERIES=1000000
# PER_MESSAGE=300 is a quick look.
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${REQUESTS:-100}
# shellcheck source=loadtest/cost_state.sh
source loadtest/cost_state.sh
# Buffers in huge pages, as README "Production: PostgreSQL settings" advises for buffers this
# large (HUGE_PAGES=0: not).
huge_pages=${HUGE_PAGES:-1}
bench_name=cost-curve
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
load_json=$("$bin" app create load --format json)
key=$(json_field writeKey <<<"$load_json")
load_app=$(json_field appId <<<"$load_json")
stored_app=$(create_app stored appId)
token=$("$bin" token create --role read --format json | json_field token)

stop_server() {
    kill "$server_pid" && wait "$server_pid" 2>/dev/null || true
    server_pid=""
}

start_server
echo "cost: (1) ingestion into the empty database, ${DURATION}s of $BATCH-event requests" >&2
read -r empty_rate empty_fpi empty_wal empty_checkpoints empty_pg empty_collector empty_blocks \
    <<<"$(ingest empty)"
stop_server

echo "cost: (2) loading the stored state ($DELIVERIES + $((1980 * PER_MESSAGE)) deliveries)" >&2
load_start=$(date +%s)
load_stored_state "$stored_app" "$load_app"
load_s=$(($(date +%s) - load_start))
buffers="$(psql "$DATABASE_URL" -tAc "SHOW shared_buffers"), ${huge_pages_held:-no} huge pages"
prewarmed=none
if [[ ${PREWARM:-0} == 1 ]]; then
    prewarm_s=$(date +%s)
    blocks=$(prewarm_ingestion_indexes)
    prewarmed="$((blocks * 8 / 1024)) MB in $(($(date +%s) - prewarm_s)) s"
    echo "cost: read the indexes ingestion writes into the buffers: $prewarmed" >&2
fi
state=$(psql "$DATABASE_URL" -tA -F' ' -c "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM report_keys), (SELECT count(*) FROM deliveries), (SELECT count(*) FROM messages), pg_database_size(current_database()), pg_relation_size('report_deltas')")

start_server
echo "cost: (3) the same ingestion on top of it" >&2
read -r stored_rate stored_fpi stored_wal stored_checkpoints stored_pg stored_collector stored_blocks \
    <<<"$(ingest stored)"

echo "cost: (4) $REQUESTS campaign reports at $DELIVERIES deliveries" >&2
wait_packed
get_times /api/v1/reports/campaigns/bench "$work/report.txt"
delivered=$(curl -sf -H "Authorization: Bearer $token" "http://127.0.0.1:$http_port/api/v1/reports/campaigns/bench" | json_field delivered)

python3 - "$empty_rate" "$stored_rate" "$state" "$load_s" "$work/report.txt" "$delivered" \
    "$empty_fpi $empty_wal $empty_checkpoints $empty_pg $empty_collector $empty_blocks" \
    "$stored_fpi $stored_wal $stored_checkpoints $stored_pg $stored_collector $stored_blocks" \
    "$DURATION" "$buffers" "$prewarmed" <<'PY'
import os, statistics, sys
empty, stored = int(sys.argv[1]), int(sys.argv[2])
wal = {"(1)": sys.argv[7].split(), "(3)": sys.argv[8].split()}
events, keys, deliveries, messages, size, deltas = map(int, sys.argv[3].split())
times = sorted(float(line) * 1000 for line in open(sys.argv[5]) if line.strip())
median, p90 = statistics.median(times), times[int(len(times) * 0.9) - 1]
ratio = stored / empty if empty else 0
print()
print(f"stored state: {events:,} raw events, {keys:,} report keys, {deliveries:,} deliveries, "
      f"{messages:,} messages, {size / 2**30:.1f} GiB (the rollup delta table {deltas / 2**20:,.0f} MB); "
      f"loaded in {sys.argv[4]} s; "
      f"shared_buffers {sys.argv[10]}; indexes read into the buffers before (3): {sys.argv[11]}")
print()
print(f"{'figure':52} {'value':>12}")
print(f"{'(1) ingestion, empty database (events/s)':52} {empty:>12,}")
print(f"{'(3) ingestion, with the stored state (events/s)':52} {stored:>12,}")
for run, (fpi, wal_bytes, checkpoints, pg, collector, blocks) in wal.items():
    print(f"{run + ' WAL per event: full-page images, bytes':52} {fpi:>6} {int(wal_bytes):>5,}")
    print(f"{run + ' checkpoints in ' + sys.argv[9] + ' s':52} {int(checkpoints):>12}")
    print(f"{run + ' CPU per event: PostgreSQL, collector (µs)':52} {pg:>6} {collector:>5}")
    print(f"{run + ' blocks read into the buffers per event':52} {blocks:>12}")
print(f"{'(4) campaign report at ' + format(int(sys.argv[6]), ',') + ' delivered, median':52} {median:>10.2f}ms")
print(f"{'(4) p90':52} {p90:>10.2f}ms")
print()
print(f"{'target':28} {'measured':>10}  {'goal':8} result")
print(f"{'(3) / (1)':28} {ratio:>10.2f}  {'>= 0.8':8} {'pass' if ratio >= 0.8 else 'FAIL'}")
print(f"{'report median (ms)':28} {median:>10.2f}  {'<= 20':8} {'pass' if median <= 20 else 'FAIL'}")
summary = os.environ.get("BENCH_SUMMARY")
if summary:
    with open(summary, "a") as out:
        for row in [
            ("cost curve", "ingestion with the stored state / empty", f"{ratio:.2f}",
             f"{stored:,} / {empty:,} events/s",
             f"{events:,} reports stored, shared_buffers {sys.argv[10]}, prewarmed {sys.argv[11]}",
             ">= 0.8",
             "pass" if ratio >= 0.8 else "FAIL"),
            ("cost curve", "campaign report median, stored state", f"{median:.2f} ms",
             f"{int(sys.argv[6]):,} delivered", "", "<= 20 ms", "pass" if median <= 20 else "FAIL"),
        ]:
            out.write("\t".join(row) + "\n")
PY
if [[ ${STATEMENTS:-0} == 1 ]]; then
    python3 loadtest/statement_stats.py "empty=$work/statements-empty.log:$(cat "$work/statements-empty.events")" \
        "stored=$work/statements-stored.log:$(cat "$work/statements-stored.events")"
fi
