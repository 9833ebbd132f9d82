#!/usr/bin/env bash
# Slowloris (issue 15): slowhttptest's trickling-header connections beside real traffic.
# Builds in release mode and starts a fresh PostgreSQL, then:
#   (1) `make run-cluster`'s pieces (two collectors behind HAProxy with TLS, deploy/haproxy.cfg):
#       FRONT_SLOW (10,000) slow-header connections opened at FRONT_RATE (1,000) a second
#       against HAProxy, while single-event requests over HTTPS run at half the maximum rate
#       measured through the same front;
#   (2) a bare collector with its defaults (--max-connections 4096, --header-timeout 5):
#       BARE_SLOW (6,000) connections at BARE_RATE (500) a second, the issue's
#       `slowhttptest -c 6000 -H -i 10 -r 500 -x 24`, within the documented limit of
#       max-connections / header-timeout (819) new slow connections a second, with the same
#       half-rate traffic straight to the collector.
# Each part first runs the half-rate traffic alone (the baseline), then beside the slow
# connections. Targets beside them: every real request 200, p99 <= 25 ms, slowhttptest's probe
# answered ("service available: YES") every second. Prints a table; exit status 1 when a target
# is missed. Environment: DURATION (seconds of measured traffic per run, 20), FRONT_SLOW,
# FRONT_RATE, BARE_SLOW, BARE_RATE.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-20}
FRONT_SLOW=${FRONT_SLOW:-10000}
FRONT_RATE=${FRONT_RATE:-1000}
BARE_SLOW=${BARE_SLOW:-6000}
BARE_RATE=${BARE_RATE:-500}

bench_name=slowloris
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
key=$(create_app slowloris writeKey)

# slowhttptest against URL $1: $2 connections at $3 a second, one header field of up to 24
# bytes every 10 s each, its probe timing out after 3 s; statistics in $work/$4.csv. Sets
# slow_pid and returns once every connection has been opened.
start_slowloris() {
    local length=$(($2 / $3 + DURATION + 10))
    slowhttptest -H -c "$2" -r "$3" -i 10 -x 24 -p 3 -l "$length" -g -o "$work/$4" -u "$1" \
        >"$work/$4.out" 2>&1 &
    slow_pid=$!
    sleep $(($2 / $3 + 2))
}

# slowhttptest's CSV $1 (Seconds, Closed, Pending, Connected, Service Available: the target
# count while its probe is answered in time, 0 while not) as key=value figures.
slowloris_figures() {
    python3 - "$1" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
down = sum(1 for r in rows if int(r["Service Available"]) == 0)
print(f"peak_connected={max(int(r['Connected']) for r in rows)} closed={rows[-1]['Closed']} "
      f"seconds={len(rows)} unavailable_seconds={down}")
PY
}

# One part against $wrk_url: the maximum single-event rate, half of it alone, then half of it
# while slowhttptest opens $2 connections at $3 a second against $1; prints
# "slowloris figures|maximum req/s|RESULT alone|RESULT beside".
measure() {
    local url=$1 count=$2 rate=$3 name=$4 max half alone beside
    echo "slowloris: ($name) maximum single-event rate through $wrk_url" >&2
    run_wrk 1 0 3 >/dev/null
    max=$(run_wrk 1 0 5)
    half=$(half_rate "$max")
    echo "slowloris: ($name) $half req/s, half of $(field "$max" rps), for ${DURATION}s, alone" >&2
    alone=$(run_wrk 1 "$half" "$DURATION")
    echo "slowloris: ($name) $count slow-header connections at $rate/s against $url" >&2
    start_slowloris "$url" "$count" "$rate" "$name"
    echo "slowloris: ($name) the same half rate for ${DURATION}s beside them" >&2
    beside=$(run_wrk 1 "$half" "$DURATION")
    wait "$slow_pid" || true
    echo "$(slowloris_figures "$work/$name.csv")|$(field "$max" rps)|$alone|$beside"
}

# (1) The HAProxy front, as make run-cluster starts it.
tls_port=$(free_port)
COLLECTORS=2 TLS_PORT=$tls_port TLS_BIND=127.0.0.1 PUSHTRACK_BIN=$bin RUN_DIR="$work/cluster" \
    TLS_DIR="$work/tls" SERVE_ARGS="--log-level warning" scripts/run-cluster.sh >"$work/cluster.out" 2>&1 &
cluster_pid=$!
until grep -q "run-cluster: ready" "$work/cluster.out" 2>/dev/null; do
    kill -0 "$cluster_pid" 2>/dev/null || { cat "$work/cluster.out" >&2; exit 1; }
    sleep 0.2
done
maxconn=$(sed -n 's/.*(maxconn \([0-9]*\)).*/\1/p' "$work/cluster.out" | head -1)
echo "slowloris: HAProxy's maxconn is $maxconn here (half of this shell's descriptor limit)" >&2
wrk_url="https://127.0.0.1:$tls_port"
front=$(measure "$wrk_url/customer-track/upload-event" "$FRONT_SLOW" "$FRONT_RATE" front)
kill "$cluster_pid"
wait "$cluster_pid" 2>/dev/null || true

# (2) A bare collector with its defaults.
start_server --log-level warning
wrk_url="http://127.0.0.1:$http_port"
bare=$(measure "$wrk_url/customer-track/upload-event" "$BARE_SLOW" "$BARE_RATE" bare)
timeouts=$(curl -s "$wrk_url/metrics" | sed -n 's/^pushtrack_http_header_timeouts_total //p')

python3 - "$front" "$bare" "$FRONT_SLOW" "$FRONT_RATE" "$BARE_SLOW" "$BARE_RATE" "$timeouts" <<'PY'
import re, sys
def figures(text):
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", text)}
print()
print(f"{'run':44} {'peak slow':>9} {'down s':>6} {'max r/s':>8} {'req/s':>7} {'p50 ms':>7} "
      f"{'p99 ms':>7} {'errors':>6} {'non2xx':>6}")
ok = True
for name, text in ((f"(1) HAProxy front, {sys.argv[3]} slow at {sys.argv[4]}/s", sys.argv[1]),
                   (f"(2) bare collector, {sys.argv[5]} slow at {sys.argv[6]}/s", sys.argv[2])):
    slow, maximum, alone, beside = text.split("|")
    slow, alone, beside = figures(slow), figures(alone), figures(beside)
    print(name)
    for label, run, peak, down, top in (
            ("half rate alone", alone, "", "", f"{float(maximum):,.0f}"),
            ("half rate beside the slow connections", beside, f"{slow['peak_connected']:,.0f}",
             f"{slow['unavailable_seconds']:.0f}", "")):
        print(f"    {label:40} {peak:>9} {down:>6} {top:>8} {run['rps']:>7,.0f} "
              f"{run['p50_ms']:>7.2f} {run['p99_ms']:>7.2f} {run['errors']:>6.0f} "
              f"{run['non2xx']:>6.0f}")
    ok = ok and beside["p99_ms"] <= 25 and beside["errors"] == 0 and beside["non2xx"] == 0 \
        and slow["unavailable_seconds"] == 0
print(f"\nbare collector: {sys.argv[7]} connections closed at the header deadline")
print(f"every request 200, p99 <= 25 ms, service available throughout: {'pass' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
PY
