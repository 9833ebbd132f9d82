#!/usr/bin/env bash
# What registering a send costs its caller (POST /api/v1/campaigns/{id}/sends), with a title
# (the server then attributes the stored legacy reports the send explains, sql/017: it waits for
# the running writer transactions and takes the reports of that title) and without one (nothing
# to attribute), idle and while wrk posts single events flat out. Prints each registration's
# time (curl's time_total, seconds) and the load's rate. Release build, fresh PostgreSQL.
# Environment: ROUNDS (10), CONNECTIONS (32), DURATION (seconds of load, 25).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-10}
CONNECTIONS=${CONNECTIONS:-32}
DURATION=${DURATION:-25}
bench_name=register-latency
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
key=$(create_app latency writeKey)
admin=$("$bin" token create --role admin --format json | json_field token)
start_server
# Registers message $2, with title $1 when it is not empty; prints the time taken.
register() {
    local titled=""
    [[ -n "$1" ]] && titled=",\"title\":\"$1\""
    curl -s -o /dev/null -w "%{time_total}" -X POST "localhost:$http_port/api/v1/campaigns/c/sends" \
        -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
        -d "{\"messageId\":\"$2\"$titled,\"sentAt\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"sent\":10}"
}
# Prints $1 rounds of "titled untitled" times, then the medians.
rounds() {
    local titled=() untitled=()
    for i in $(seq "$ROUNDS"); do
        titled+=("$(register "$2 $i" "t-$2-$i")")
        untitled+=("$(register "" "u-$2-$i")")
        sleep "${3:-0}"
    done
    python3 - "$1" "${titled[*]}" "${untitled[*]}" <<'PY'
import statistics, sys
label, titled, untitled = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
print(f"{label}: with a title median {statistics.median(titled) * 1000:.1f} ms "
      f"(max {max(titled) * 1000:.1f}), without {statistics.median(untitled) * 1000:.1f} ms "
      f"(max {max(untitled) * 1000:.1f}), {len(titled)} each")
PY
}
rounds idle Idle
PT_KEY=$key PT_BATCH=1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -s loadtest/events.lua \
    "http://127.0.0.1:$http_port/customer-track/upload-event" >"$work/wrk.txt" &
wrk_pid=$!
sleep 3
rounds "under load" Load 1
wait "$wrk_pid"
echo "load: $(grep -E 'Requests/sec' "$work/wrk.txt" | awk '{print $2}') single-event requests/s at $CONNECTIONS connections"
