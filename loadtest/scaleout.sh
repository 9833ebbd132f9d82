#!/usr/bin/env bash
# Scale-out figures (issue 20), on one PostgreSQL of its own (loadtest/fresh.sh):
#   (a) 1, 2 and 4 collectors behind HAProxy: events/s, and CPU per 1,000 events of the
#       collectors, PostgreSQL and HAProxy (CPU time: it holds on a busy machine; events/s
#       does not);
#   (b) 2 collectors with a streaming standby of the same machine, asynchronous, then
#       synchronous (synchronous_standby_names): events/s and CPU per 1,000 events;
#   (c) report latency while (b)'s ingestion runs flat out: REPORTS sequential
#       GET /api/v1/reports/campaigns/c0 from a third collector that reads on the standby
#       (--read-database-url), then from one that reads on the primary; the largest
#       X-Replica-Lag-Seconds seen.
# wrk: 2 threads, CONNECTIONS (64) connections, BATCH (20) events per request, DURATION (10) s.
# PARTS (abc) picks the parts to run. Figures, not a test: exits 0. On 2 cores every process shares the same two CPUs (wrk too),
# so more collectors show the cost per collector, not a speed-up.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
BATCH=${BATCH:-20}
REPORTS=${REPORTS:-300}
PARTS=${PARTS:-abc}
export CONNECTIONS=${CONNECTIONS:-64}

bench_name=scaleout
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
app_json=$("$bin" app create scaleout --format json)
key=$(json_field writeKey <<<"$app_json")
app_id=$(json_field appId <<<"$app_json")
token=$("$bin" token create --role read --app "$app_id" --format json | json_field token)

sum_cpu() {
    local total=0 pid
    for pid in "$@"; do total=$(python3 -c "print($total + $(proc_cpu "$pid"))"); done
    echo "$total"
}

collector_pids=()
collector_ports=()
haproxy_pid=""
standby_port=""
stop_processes() {
    local pid
    for pid in "${collector_pids[@]}" $haproxy_pid; do kill "$pid" 2>/dev/null || true; done
    for pid in "${collector_pids[@]}" $haproxy_pid; do wait "$pid" 2>/dev/null || true; done
    collector_pids=()
    collector_ports=()
    haproxy_pid=""
}
finish() {
    stop_processes
    [[ -n "$standby_port" ]] && scripts/pg.sh stop "$work/standby" immediate
    cleanup
}
trap finish EXIT

# Starts a collector with the given extra flags; its port goes to collector_ports.
start_collector() {
    local port log
    port=$(free_port)
    log="$work/collector-${#collector_pids[@]}.log"
    "$bin" serve --port "$port" --bind 127.0.0.1 --log-level warning "$@" 2>>"$log" &
    collector_pids+=($!)
    collector_ports+=("$port")
    for _ in $(seq 300); do curl -sf "localhost:$port/readyz" >/dev/null && return; sleep 0.1; done
    echo "scaleout: a collector did not become ready: $(tail -3 "$log")" >&2
    exit 1
}

# HAProxy on $http_port in front of every collector in collector_ports (round robin).
start_haproxy() {
    {
        printf 'global\n    maxconn 4096\ndefaults\n    mode http\n    option http-keep-alive\n'
        printf '    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n'
        printf 'frontend collectors\n    bind 127.0.0.1:%s\n    default_backend pushtrack\n' "$http_port"
        printf 'backend pushtrack\n    balance roundrobin\n    option httpchk GET /readyz\n'
        local i=0 port
        for port in "${collector_ports[@]}"; do
            i=$((i + 1))
            printf '    server c%d 127.0.0.1:%s check inter 500ms\n' "$i" "$port"
        done
    } >"$work/haproxy.cfg"
    haproxy -db -f "$work/haproxy.cfg" 2>>"$work/haproxy.log" &
    haproxy_pid=$!
    for _ in $(seq 100); do curl -sf "localhost:$http_port/readyz" >/dev/null && return; sleep 0.1; done
    echo "scaleout: HAProxy did not answer: $(tail -3 "$work/haproxy.log")" >&2
    exit 1
}

stored() { psql "$DATABASE_URL" -tAc "SELECT count(*) FROM events"; }

# One wrk run through HAProxy; prints: label events/s collector-ms pg-ms haproxy-ms (CPU per
# 1,000 events).
measure() {
    local label=$1 before pg0 c0 h0 result
    run_wrk "$BATCH" 0 2 >/dev/null # warm-up
    before=$(stored)
    pg0=$(pg_cpu)
    c0=$(sum_cpu "${collector_pids[@]}")
    h0=$(proc_cpu "$haproxy_pid")
    result=$(run_wrk "$BATCH" 0 "$DURATION")
    python3 - "$label" "$(($(stored) - before))" "$(field "$result" seconds)" \
        "$(python3 -c "print($(sum_cpu "${collector_pids[@]}") - $c0)")" \
        "$(python3 -c "print($(pg_cpu) - $pg0)")" \
        "$(python3 -c "print($(proc_cpu "$haproxy_pid") - $h0)")" <<'PY'
import sys
label, events, seconds, c, p, h = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), *map(float, sys.argv[4:])
k = max(events, 1) / 1000
print(f"{label:34} {events / seconds:>9,.0f} {c / k * 1000:>10.1f} {p / k * 1000:>10.1f} {h / k * 1000:>9.1f} {(c + p + h) / k * 1000:>9.1f}")
PY
}

header() {
    printf '%-34s %9s %10s %10s %9s %9s\n' "$1" "events/s" "collector" "PostgreSQL" "HAProxy" "total"
    printf '%-34s %9s %10s %10s %9s %9s\n' "" "" "ms CPU/1k" "ms CPU/1k" "ms/1k" "ms/1k"
}

[[ $PARTS == *a* ]] && echo "scaleout: (a) 1, 2, 4 collectors, $BATCH-event requests, $CONNECTIONS connections, ${DURATION}s each" >&2
rows_a=()
[[ $PARTS == *a* ]] && for n in 1 2 4; do
    for _ in $(seq "$n"); do start_collector; done
    start_haproxy
    rows_a+=("$(measure "$n collector(s)")")
    stop_processes
done

echo "scaleout: (b) a streaming standby, asynchronous then synchronous" >&2
standby_port=$(free_port)
scripts/replica.sh create "$pg_port" "$work/standby" "$standby_port" standby1 >/dev/null
scripts/replica.sh wait "$pg_port" standby1 async
standby_url=$(scripts/pg.sh url "$standby_port")
start_collector
start_collector
start_haproxy
rows_b=()
if [[ $PARTS == *b* ]]; then
    rows_b+=("$(measure "2, asynchronous standby")")
    scripts/replica.sh sync "$pg_port" standby1
    scripts/replica.sh wait "$pg_port" standby1 sync
    rows_b+=("$(measure "2, synchronous standby")")
    scripts/replica.sh sync "$pg_port" off
fi

# (c) Sequential report requests on one keep-alive connection; prints p50/p90/p99 ms and the
# largest lag header seen.
report_latency() {
    python3 - "$1" "$REPORTS" "$token" "$app_id" <<'PY'
import http.client, sys, time
port, count, token, app = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
times, lag, bad = [], 0.0, 0
for _ in range(count):
    t = time.perf_counter()
    conn.request("GET", f"/api/v1/reports/campaigns/c0?appId={app}", headers={"Authorization": f"Bearer {token}"})
    r = conn.getresponse(); r.read()
    times.append((time.perf_counter() - t) * 1000)
    if r.status != 200: bad += 1
    lag = max(lag, float(r.getheader("X-Replica-Lag-Seconds") or 0))
times.sort()
q = lambda p: times[min(len(times) - 1, int(p * len(times)))]
print(f"{q(0.5):>8.1f} {q(0.9):>8.1f} {q(0.99):>8.1f} {lag:>9.3f} {bad:>5}")
PY
}
echo "scaleout: (c) report latency while 2 collectors ingest flat out" >&2
rows_c=()
[[ $PARTS == *c* ]] && for target in replica primary; do
    if [[ $target == replica ]]; then start_collector --read-database-url "$standby_url"; else start_collector; fi
    reports_port=${collector_ports[-1]}
    before=$(stored)
    run_wrk "$BATCH" 0 "$((DURATION + 20))" >"$work/wrk-$target.txt" &
    wrk_pid=$!
    sleep 2
    latency=$(report_latency "$reports_port")
    wait "$wrk_pid"
    rate=$(python3 -c "print(round(($(stored) - $before) / $(field "$(cat "$work/wrk-$target.txt")" seconds)))")
    rows_c+=("$(printf '%-34s %8s %8s %8s %9s %5s %9s' "reports read on the $target" $latency "$rate")")
    kill "${collector_pids[-1]}"
    wait "${collector_pids[-1]}" 2>/dev/null || true
    unset 'collector_pids[-1]' 'collector_ports[-1]'
done

echo
header "(a) collectors behind HAProxy"
printf '%s\n' "${rows_a[@]}"
echo
header "(b) 2 collectors and a standby"
printf '%s\n' "${rows_b[@]}"
echo
printf '%-34s %8s %8s %8s %9s %5s %9s\n' "(c) campaign report latency" "p50 ms" "p90 ms" "p99 ms" "max lag s" "non-2xx" "events/s"
printf '%s\n' "${rows_c[@]}"
echo
echo "CPU: user + system time of the collectors, of PostgreSQL (every backend, walsenders included; the standby's own processes are not counted) and of HAProxy, per 1,000 events stored. One machine of $(nproc) cores runs wrk, HAProxy, the collectors, the primary and the standby."
