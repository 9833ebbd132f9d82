#!/usr/bin/env bash
# Where a campaign report's time goes: the data of loadtest/report_bench.sh (one campaign of
# 1,000,000 deliveries, its conversions and arrival seconds) in a fresh PostgreSQL with
# pg_stat_statements, then REQUESTS reports of it: their median, the CPU per report of the
# collector and of PostgreSQL, per statement the PostgreSQL time per report, and what packing
# every message's histograms again costs (sql/014). PERF=1 also records the collector with `perf` during them and prints the share of
# its CPU (children included) in the report's parts: building it, reading the packed
# histograms, their merges and quantiles, libpq results, JSON. Figures, not a test: it exits 0. Environment: REQUESTS (50),
# PERF (0).
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${REQUESTS:-50}
PERF=${PERF:-0}

bench_name=report-profile
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
app=$(create_app bench appId)
token=$("$bin" token create --role read --format json | json_field token)
echo "shared_preload_libraries = 'pg_stat_statements'" >>"$work/pg/postgresql.conf"
scripts/pg.sh stop "$work/pg" >/dev/null
scripts/pg.sh start "$work/pg" "$pg_port" >/dev/null
psql "$DATABASE_URL" -qc "CREATE EXTENSION pg_stat_statements"
t0=$(psql "$DATABASE_URL" -tAc "SELECT date_trunc('hour', now() - interval '2 hours')")
echo "profile: loading 1,000,000 deliveries" >&2
psql "$DATABASE_URL" -q -v app="$app" -v t0="$t0" -v conversions=true -f loadtest/report_bench.sql
psql "$DATABASE_URL" -qtAc "SELECT pushtrack_compact_report_deltas() + pushtrack_compact_conversion_deltas() + pushtrack_compact_delivery_deltas()" >/dev/null
psql "$DATABASE_URL" -qc "VACUUM ANALYZE"
start_server
wait_packed

psql "$DATABASE_URL" -qtAc "SELECT pg_stat_statements_reset()" >/dev/null
if [[ $PERF == 1 ]]; then
    perf record -F 2000 -g -p "$server_pid" -o "$work/perf.data" >/dev/null 2>&1 &
    perf_pid=$!
    sleep 0.5
fi
server_before=$(proc_cpu "$server_pid")
pg_before=$(pg_cpu)
get_times /api/v1/reports/campaigns/bench "$work/times.txt"
server_after=$(proc_cpu "$server_pid")
pg_after=$(pg_cpu)
if [[ $PERF == 1 ]]; then
    kill -INT "$perf_pid"
    wait "$perf_pid" || true
fi

echo
python3 - "$work/times.txt" "$REQUESTS" "$server_before" "$server_after" "$pg_before" "$pg_after" <<'PY'
import statistics, sys
times = [float(line) * 1000 for line in open(sys.argv[1]) if line.strip()]
n, (s0, s1, p0, p1) = int(sys.argv[2]) + 20, map(float, sys.argv[3:])
print(f"report median {statistics.median(times):.2f} ms; CPU per report (warm-up included): "
      f"collector {(s1 - s0) / n * 1000:.2f} ms, PostgreSQL {(p1 - p0) / n * 1000:.2f} ms")
PY
# What packing every message's histograms again costs (sql/014), in a transaction rolled back.
psql "$DATABASE_URL" -qtA -c '\timing on' -c 'BEGIN' \
    -c "SELECT pushtrack_pack_histograms(h, array_agg(app_id), array_agg(message_id)) FROM messages, unnest(ARRAY['open', 'deliver', 'opens']) h GROUP BY h" \
    -c 'ROLLBACK' | sed -n 's/^Time: \(.*\)/packing every message'"'"'s histograms again: \1/p' | sed -n 2p

echo
echo "PostgreSQL time per report, by statement (ms), over $((REQUESTS + 20)) reports"
psql "$DATABASE_URL" -tA -F' ' -c "SELECT round((total_exec_time / ($REQUESTS + 20))::numeric, 2), left(regexp_replace(query, '\s+', ' ', 'g'), 100) FROM pg_stat_statements WHERE query !~* 'pg_stat_statements' AND calls >= $REQUESTS ORDER BY total_exec_time DESC LIMIT 10"
if [[ $PERF == 1 ]]; then
    echo
    echo "collector: share of its CPU in the report's parts, children included (perf report)"
    perf report -i "$work/perf.data" --children --sort symbol --stdio 2>/dev/null |
        grep -E '^ +[0-9]' |
        grep -E 'ReportStore.*(histograms|buildCampaign)|LatencyHistogram|JSONEncoderC6encodeyAA4Data|copyRows|Connection(C5query|C13queryPrepared)' |
        head -12 | cut -c1-150
fi
