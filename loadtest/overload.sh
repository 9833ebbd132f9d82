#!/usr/bin/env bash
# Overload (issue 7): offered load far above capacity. Builds in release mode, starts a fresh
# PostgreSQL and a collector with its default bounds, then
#   (1) baseline: 50-event batches on 64 connections, flat out;
#   (2) overload: the same batches on OVERLOAD_CONNECTIONS connections (2,000: 100,000 events in
#       flight against a queue bound of 50,000), counting answers by status and 503s without
#       Retry-After, sampling the server's RSS;
#   (3) recovery: the time from the load dropping until a new request is accepted again (the
#       queue first drains what was queued under overload), then the baseline load again.
# Prints the figures and checks: every refusal is a 503/429 with Retry-After, peak RSS ≤ 200 MB,
# recovery without errors at ≥ 80 % of the baseline rate, and every acknowledged event stored.
# Exit status 1 when a check fails.
# Environment: DURATION (seconds per run, 10), OVERLOAD_CONNECTIONS (2000).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
OVERLOAD_CONNECTIONS=${OVERLOAD_CONNECTIONS:-2000}

bench_name=overload
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
key=$(create_app overload writeKey)

start_server

flood() { # connections duration
    PT_KEY=$key PT_BATCH=50 PT_STATUSES=1 wrk -t2 -c"$1" -d"$2"s --timeout 10s \
        -s loadtest/events.lua "http://127.0.0.1:$http_port" | grep -E '^(RESULT|STATUSES)' | tr '\n' ' '
}
sample_rss() { # prints the highest VmRSS (kB) seen until the file $work/stop-sampling exists
    local peak=0 rss
    while [[ ! -e "$work/stop-sampling" ]]; do
        rss=$(awk '/VmRSS/ {print $2}' "/proc/$server_pid/status" 2>/dev/null || echo 0)
        ((rss > peak)) && peak=$rss
        sleep 0.2
    done
    echo "$peak"
}

echo "overload: warming up" >&2
flood 64 3 >/dev/null
stored_before=$(psql "$DATABASE_URL" -tAc "SELECT count(*) FROM events")
echo "overload: (1) baseline, 64 connections, ${DURATION}s" >&2
base=$(flood 64 "$DURATION")
rss_before=$(awk '/VmRSS/ {print $2}' "/proc/$server_pid/status")
echo "overload: (2) $OVERLOAD_CONNECTIONS connections, ${DURATION}s" >&2
sample_rss >"$work/rss" &
sampler=$!
over=$(flood "$OVERLOAD_CONNECTIONS" "$DURATION")
touch "$work/stop-sampling"
wait "$sampler"
rss_peak=$(cat "$work/rss")
dropped=$(date +%s.%N)
probe=0
until [[ $(curl -s -o /dev/null -w '%{http_code}' -H "X-App-Key: $key" -H 'Content-Type: application/json' \
    --data "{\"pageId\":\"push\",\"category\":\"push_arrival\",\"messageId\":\"probe\",\"deviceId\":\"probe$probe\"}" \
    "http://127.0.0.1:$http_port/customer-track/upload-event") == 200 ]]; do
    probe=$((probe + 1))
    sleep 0.05
done
recovered=$(python3 -c "import time; print(f'{time.time() - $dropped:.2f}')")
echo "overload: (3) recovery, 64 connections, ${DURATION}s" >&2
after=$(flood 64 "$DURATION")
rss_hwm=$(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status")
kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""
stored=$(($(psql "$DATABASE_URL" -tAc "SELECT count(*) FROM events WHERE message_id IS DISTINCT FROM 'probe'") - stored_before))
crashes=$(grep -c -iE 'fatal|crash' "$work/server.log" || true)

python3 - "$base" "$over" "$after" "$rss_before" "$rss_peak" "$rss_hwm" "$stored" "$crashes" "$recovered" "$probe" <<'PY'
import re, sys
def parse(text):
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", text)}
base, over, after = (parse(a) for a in sys.argv[1:4])
rss_before, rss_peak, rss_hwm = (int(a) / 1024 for a in sys.argv[4:7])
stored, crashes = int(sys.argv[7]), int(sys.argv[8])
recovered, refused_probes = float(sys.argv[9]), int(sys.argv[10])
acked = sum(run.get("s200", 0) for run in (base, over, after)) * 50
refused = over.get("s503", 0) + over.get("s429", 0)
other = sum(v for k, v in over.items() if re.fullmatch(r"s\d+", k) and k not in ("s200", "s503", "s429"))
rows = [
    ("(1) baseline events/s", f"{base['rps'] * 50:,.0f}", f"p99 {base['p99_ms']:.1f} ms, non-2xx {base['non2xx']:.0f}"),
    ("(2) overload answers/s", f"{over['rps']:,.0f}", f"200: {over.get('s200', 0):,.0f}, 503/429: {refused:,.0f}, other: {other:.0f}, timeouts {over['timeouts']:.0f}"),
    ("(2) events/s stored under overload", f"{over.get('s200', 0) * 50 / over['seconds']:,.0f}", f"p50 {over['p50_ms']:.1f} ms, p99 {over['p99_ms']:.1f} ms"),
    ("(2) 503/429 without Retry-After", f"{over['no_retry_after']:.0f}", ""),
    ("(3) accepting again after", f"{recovered:.2f} s", f"{refused_probes} probe requests refused (503) while the queue drained"),
    ("(3) recovery events/s", f"{after['rps'] * 50:,.0f}", f"{after['rps'] / base['rps']:.0%} of baseline, non-2xx {after['non2xx']:.0f}, p99 {after['p99_ms']:.1f} ms"),
    ("server RSS before / peak / VmHWM", f"{rss_peak:.0f} MB", f"{rss_before:.0f} MB before, VmHWM {rss_hwm:.0f} MB"),
    ("events acknowledged / stored", f"{acked:,.0f}", f"{stored:,} stored (requests cut at the end of a run, or queued when their client gave up, are stored unacknowledged)"),
]
print()
print(f"{'figure':36} {'value':>12}  notes")
for name, value, note in rows:
    print(f"{name:36} {value:>12}  {note}")
checks = [
    ("overload was reached (some 503/429)", refused > 0),
    ("every refusal carries Retry-After", over["no_retry_after"] == 0),
    ("no other status under overload", other == 0),
    ("peak RSS <= 200 MB", rss_hwm <= 200),
    ("recovery: no errors", after["non2xx"] == 0 and after["errors"] == 0),
    ("recovery: >= 80% of baseline rate", after["rps"] >= 0.8 * base["rps"]),
    ("accepting again within 10 s", recovered <= 10),
    ("every acknowledged event stored", stored >= acked),
    ("server logged no crash", crashes == 0),
]
print()
for name, ok in checks:
    print(f"{name:40} {'pass' if ok else 'FAIL'}")
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY
