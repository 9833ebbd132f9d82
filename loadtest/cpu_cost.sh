#!/usr/bin/env bash
# Where the CPU goes (issues 3 and 4): CPU time, not wall time, so it holds on a busy machine.
# Builds in release mode, starts a fresh PostgreSQL and a collector, then measures
#   (c) PostgreSQL's CPU per 1,000 rows for a COPY of COPY_ROWS events into the raw table;
#   (b) PostgreSQL's and the collector's CPU per 1,000 events ingested in BATCH-event batches
#       (BATCH=1: single-event requests, as in (a))
#       (wrk, 64 connections, DURATION seconds), dedup, delivery state and rollups included;
#   per statement, PostgreSQL's execution time per 1,000 events (pg_stat_statements);
#   the collector's CPU per `GET /healthz` (HEALTHZ_SECONDS of wrk, 64 connections): the HTTP
#   layer's own cost per request on this machine, the floor under (b)'s collector figure.
# PostgreSQL's CPU is that of the postmaster and every process it started (exited ones
# included, through the postmaster's child times). CONVERSION=<category> declares that conversion
# category for the app first (the same load, the writers tracking the app's devices).
# Figures, not a test: exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
COPY_ROWS=${COPY_ROWS:-200000}
BATCH=${BATCH:-50}
HEALTHZ_SECONDS=${HEALTHZ_SECONDS:-5}

bench_name=cpu
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
app_json=$("$bin" app create cpu --format json)
key=$(json_field writeKey <<<"$app_json")

# pg_stat_statements for the per-statement times: loaded at start, so restart the cluster.
echo "shared_preload_libraries = 'pg_stat_statements'" >>"$work/pg/postgresql.conf"
scripts/pg.sh stop "$work/pg" >/dev/null
scripts/pg.sh start "$work/pg" "$pg_port" >/dev/null
psql "$DATABASE_URL" -qc "CREATE EXTENSION pg_stat_statements"

echo "cpu: (c) COPY of $COPY_ROWS events" >&2
events_csv "$work/events.csv" "$COPY_ROWS"
before=$(pg_cpu)
copy_events "$work/events.csv"
copy_cpu=$(python3 -c "print($(pg_cpu) - $before)")

start_server
declare_conversion "$(json_field appId <<<"$app_json")"
PT_KEY=$key PT_BATCH=$BATCH wrk -t2 -c64 -d3s -s loadtest/events.lua "http://127.0.0.1:$http_port" >/dev/null
echo "cpu: (b) $BATCH-event requests, 64 connections, ${DURATION}s" >&2
stored_before=$(psql "$DATABASE_URL" -tAc "SELECT count(*) FROM events")
psql "$DATABASE_URL" -qtAc "SELECT pg_stat_statements_reset()" >/dev/null
before=$(pg_cpu)
server_before=$(proc_cpu "$server_pid")
server_user_before=$(proc_user_cpu "$server_pid")
PT_KEY=$key PT_BATCH=$BATCH wrk -t2 -c64 -d"$DURATION"s -s loadtest/events.lua "http://127.0.0.1:$http_port" >/dev/null
ingest_cpu=$(python3 -c "print($(pg_cpu) - $before)")
server_cpu=$(python3 -c "print($(proc_cpu "$server_pid") - $server_before)")
server_user_cpu=$(python3 -c "print($(proc_user_cpu "$server_pid") - $server_user_before)")
events=$(($(psql "$DATABASE_URL" -tAc "SELECT count(*) FROM events") - stored_before))
statements=$(psql "$DATABASE_URL" -tA -F'|' -c "SELECT round(total_exec_time::numeric, 1), calls, left(regexp_replace(query, '\s+', ' ', 'g'), 60) FROM pg_stat_statements WHERE query !~* 'pg_stat_statements' ORDER BY total_exec_time DESC LIMIT 8")

# The same server's CPU per `GET /healthz` under the same load shape (64 connections): what
# libmicrohttpd, the kernel's TCP and the server's routing and access log cost a request that
# does nothing, the floor under the collector's CPU per single-event request on this machine.
echo "cpu: GET /healthz, 64 connections, ${HEALTHZ_SECONDS}s" >&2
server_before=$(proc_cpu "$server_pid")
healthz_requests=$(wrk -t2 -c64 -d"$HEALTHZ_SECONDS"s "http://127.0.0.1:$http_port/healthz" |
    awk '/requests in/ {print $1}')
healthz_cpu=$(python3 -c "print($(proc_cpu "$server_pid") - $server_before)")

python3 - "$COPY_ROWS" "$copy_cpu" "$events" "$ingest_cpu" "$server_cpu" "$statements" "$server_user_cpu" \
    "$healthz_requests" "$healthz_cpu" <<'PY'
import sys
rows, copy_cpu, events, ingest_cpu, server_cpu = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
server_user = float(sys.argv[7]) / events * 1000
c = copy_cpu / rows * 1000
b = ingest_cpu / events * 1000
s = server_cpu / events * 1000
print()
print(f"{'CPU per 1,000 events':44} {'ms':>8}")
print(f"{'(c) PostgreSQL, COPY into the raw table':44} {c * 1000:>8.1f}")
print(f"{'(b) PostgreSQL, ingestion (dedup, rollups)':44} {b * 1000:>8.1f}   {b / c:.2f} x (c)")
print(f"{'(b) collector process':44} {s * 1000:>8.1f}")
print(f"{'    of which in user mode / in the kernel':44} {server_user * 1000:>8.1f} / {(s - server_user) * 1000:.1f}")
healthz_requests, healthz_cpu = int(sys.argv[8]), float(sys.argv[9])
h = healthz_cpu / healthz_requests * 1000
print(f"{'collector process, per 1,000 GET /healthz':44} {h * 1000:>8.1f}   "
      f"({healthz_requests:,} requests; per event (b) is {s / h:.2f} x this)")
print(f"\n{events:,} events ingested; on 2 cores, a PostgreSQL with one core to itself would ingest at most "
      f"{1 / b * 1000:,.0f} events/s against COPY's {1 / c * 1000:,.0f} rows/s")
# For `make bench` (loadtest/bench_all.sh, which runs this with BATCH=1): issue 17's two CPU
# targets for single-event requests, one row each.
import os
summary = os.environ.get("BENCH_SUMMARY")
if summary and os.environ.get("BATCH") == "1":
    verdict = lambda ok: "pass" if ok else "FAIL"
    with open(summary, "a") as out:
        for row in [
            ("cpu (BATCH=1)", "PostgreSQL CPU per single-event request", f"{b * 1e3:.1f} µs",
             f"(c) COPY row {c * 1e3:.1f} µs", f"{b / c:.2f} x", "<= 4 x", verdict(b / c <= 4)),
            ("cpu (BATCH=1)", "collector CPU per single-event request", f"{s * 1e3:.1f} µs",
             f"GET /healthz {h * 1e3:.1f} µs", f"{s / h:.2f} x", "<= 40 µs", verdict(s * 1e3 <= 40)),
        ]:
            out.write("\t".join(row) + "\n")
if sys.argv[6].strip():
    print(f"\n{'statement (wall time in it per 1,000 events)':60} {'ms':>8}")
    for line in sys.argv[6].strip().splitlines():
        total, calls, text = line.split("|", 2)
        print(f"{text:60} {float(total) / events * 1000:>8.2f}")
PY
