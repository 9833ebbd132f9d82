#!/usr/bin/env bash
# The report benchmark (issue 5): builds in release mode, starts a fresh PostgreSQL, loads one
# campaign of 1,000,000 deliveries (loadtest/report_bench.sql: the aggregates and ~1.5 M raw
# events), then measures in one run
#   (r) the median latency of GET /api/v1/reports/campaigns/{id} (the full report: messages,
#       breakdowns, open curve), REQUESTS sequential requests with curl after a warm-up;
#   (s) the same for the time series (hour buckets) and the campaign list;
#   (e) the equivalent totals computed from the raw events (one aggregate query, RAW_RUNS runs),
# and prints the figures and the ratio e/r against the target (report median <= 20 ms).
# The campaign has a conversion category with its counts (CONVERSIONS=0 leaves them out) and
# the arrival seconds behind time to deliver.
# Figures, not a test: it exits 0. Environment: REQUESTS (200), RAW_RUNS (5), CONVERSIONS (1).
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${REQUESTS:-200}
RAW_RUNS=${RAW_RUNS:-5}
CONVERSIONS=${CONVERSIONS:-1}

bench_name=report-bench
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
app=$(create_app bench appId)
token=$("$bin" token create --role read --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
t0=$(psql "$DATABASE_URL" -tAc "SELECT date_trunc('hour', now() - interval '2 hours')")

echo "bench: loading 1,000,000 deliveries and their raw events" >&2
load_start=$(date +%s.%N)
psql "$DATABASE_URL" -q -v app="$app" -v t0="$t0" -v conversions="$([[ $CONVERSIONS == 0 ]] && echo false || echo true)" -f loadtest/report_bench.sql
load_end=$(date +%s.%N)
# What `pushtrack serve` does every second, done once here for the whole load; then the
# vacuum that autovacuum would do to the emptied delta table.
psql "$DATABASE_URL" -qtAc "SELECT pushtrack_compact_report_deltas()" >/dev/null
psql "$DATABASE_URL" -qtAc "SELECT pushtrack_compact_conversion_deltas() + pushtrack_compact_delivery_deltas()" >/dev/null
psql "$DATABASE_URL" -qc "VACUUM ANALYZE report_deltas, message_rollups, message_totals, message_open_latency, message_dimension_totals, message_bucket_totals, conversion_deltas, message_conversions, message_arrival_seconds, message_deliver_latency"
counts=$(psql "$DATABASE_URL" -tA -F' ' -c "SELECT (SELECT count(*) FROM deliveries), (SELECT count(*) FROM events), (SELECT count(*) FROM message_rollups), (SELECT count(*) FROM message_open_latency), (SELECT count(*) FROM message_deliver_latency), (SELECT count(*) FROM conversion_events)")

start_server
wait_packed

echo "bench: (r) campaign report, $REQUESTS requests" >&2
get_times "/api/v1/reports/campaigns/bench" "$work/report.txt"
curl -sf -H "Authorization: Bearer $token" "http://127.0.0.1:$http_port/api/v1/reports/campaigns/bench" >"$work/report.json"
echo "bench: (s) time series and campaign list, $REQUESTS requests each" >&2
get_times "/api/v1/reports/campaigns/bench/timeseries?bucket=hour&tz=Asia/Shanghai" "$work/series.txt"
get_times "/api/v1/reports/campaigns" "$work/list.txt"

echo "bench: (e) the same totals from the raw events, $RAW_RUNS runs" >&2
cat >"$work/raw.sql" <<SQL
\timing on
SELECT count(*) FILTER (WHERE arrivals > 0 OR clicks > 0) AS delivered,
       count(*) FILTER (WHERE arrivals > 0) AS confirmed_arrivals,
       count(*) FILTER (WHERE arrivals > 0 AND foreground) AS foreground_arrivals,
       count(*) FILTER (WHERE clicks > 0) AS opened,
       sum(clicks) AS clicks,
       count(*) FILTER (WHERE dismissed) AS dismissed,
       sum(greatest(arrivals - 1, 0)) AS duplicate_reports
FROM (SELECT e.message_id, e.device_id,
             count(*) FILTER (WHERE e.category = 'push_arrival') AS arrivals,
             count(*) FILTER (WHERE e.category = 'push_click') AS clicks,
             bool_or(e.category = 'push_arrival' AND e.app_active) AS foreground,
             bool_or(e.category = 'push_dismiss') AS dismissed
      FROM events e
      JOIN messages m ON m.app_id = e.app_id AND m.message_id = e.message_id
      WHERE e.app_id = '$app' AND coalesce(m.campaign_id, m.message_id) = 'bench'
      GROUP BY 1, 2) pairs;
SQL
for _ in $(seq "$RAW_RUNS"); do psql "$DATABASE_URL" -f "$work/raw.sql"; done >"$work/raw.txt"

python3 - "$work" "$load_start" "$load_end" "$counts" <<'PY'
import json, statistics, sys
work, load_s = sys.argv[1], float(sys.argv[3]) - float(sys.argv[2])
deliveries, events, rollups, latency_rows, deliver_rows, conversions = map(int, sys.argv[4].split())
def ms(name):
    values = sorted(float(line) * 1000 for line in open(f"{work}/{name}.txt") if line.strip())
    return statistics.median(values), values[int(len(values) * 0.9) - 1]
report, series, listing = ms("report"), ms("series"), ms("list")
raw_lines = open(f"{work}/raw.txt").read().splitlines()
raw = statistics.median(float(l.split()[1]) for l in raw_lines if l.startswith("Time:"))
# The raw totals must equal the report's: the benchmark checks itself.
values = next(l for l in raw_lines if "|" in l and l.strip()[0].isdigit())
raw_totals = [int(v) for v in values.split("|")]
body = json.load(open(f"{work}/report.json"))
fields = ["delivered", "confirmedArrivals", "foregroundArrivals", "opened", "clicks", "dismissed", "duplicateReports"]
agree = raw_totals == [body[f] for f in fields]
print()
print(f"data: {deliveries:,} deliveries, {events:,} raw events, {rollups:,} rollup rows, "
      f"{latency_rows:,} open and {deliver_rows:,} delivery latency rows, {conversions:,} conversions; "
      f"loaded in {load_s:.0f} s")
print(f"report: sent {body['sent']:,}, delivered {body['delivered']:,}, opened {body['opened']:,}, "
      f"{len(body['messages'])} messages; raw totals agree: {'yes' if agree else 'NO'}")
conversion = (body.get("conversions") or [{}])[0]
print(f"conversions: {conversion.get('category', '-')} direct {conversion.get('direct', 0):,}, "
      f"influenced {conversion.get('influenced', 0):,}; time to deliver p50 "
      f"{body['timeToDeliver']['p50Seconds']} s, p99 {body['timeToDeliver']['p99Seconds']} s")
print()
print(f"{'figure':52} {'median':>10} {'p90':>10}")
print(f"{'(r) GET /api/v1/reports/campaigns/bench':52} {report[0]:>8.2f}ms {report[1]:>8.2f}ms")
print(f"{'(s) GET …/bench/timeseries?bucket=hour&tz=Asia/Shanghai':52} {series[0]:>8.2f}ms {series[1]:>8.2f}ms")
print(f"{'(s) GET /api/v1/reports/campaigns':52} {listing[0]:>8.2f}ms {listing[1]:>8.2f}ms")
print(f"{'(e) the totals from raw events (psql, server side)':52} {raw:>8.2f}ms")
print()
print(f"{'target':24} {'measured':>10}  {'goal':8} result")
print(f"{'report median (ms)':24} {report[0]:>10.2f}  {'<= 20':8} {'pass' if report[0] <= 20 else 'FAIL'}")
print(f"{'raw / report':24} {raw / report[0]:>10.1f}  {'':8}")
# For `make bench` (loadtest/bench_all.sh): tab-separated rows, as in bench.sh.
import os
summary = os.environ.get("BENCH_SUMMARY")
if summary:
    with open(summary, "a") as out:
        for row in [
            ("reports", "(r) campaign report, median", f"{report[0]:.2f} ms", f"(e) raw totals {raw:,.0f} ms", f"e/r {raw / report[0]:.0f}", "<= 20 ms", "pass" if report[0] <= 20 else "FAIL"),
            ("reports", "(s) hourly time series, median", f"{series[0]:.2f} ms", "", "", "", ""),
            ("reports", "(s) campaign list, median", f"{listing[0]:.2f} ms", "", "", "", ""),
            ("reports", "report equals the raw totals", "yes" if agree else "NO", "", "", "equal", "pass" if agree else "FAIL"),
        ]:
            out.write("\t".join(row) + "\n")
PY
