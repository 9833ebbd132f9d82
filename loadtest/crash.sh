#!/usr/bin/env bash
# Crash test with the simulator (issue 7): a release build and a fresh PostgreSQL, then two
# pushtrack-sim runs of REPORTS (200,000) reports each through one `pushtrack serve`:
#   1. the collector is killed with SIGKILL CRASH_AFTER (5) seconds into the run and restarted
#      on the same port a second later;
#   2. PostgreSQL is stopped hard (`pg_ctl stop -m immediate`) as many seconds into the run and
#      started again two seconds later, the collector left running.
# The simulator retries what was not acknowledged until it is; after each run every report
# field must equal the truth (nothing lost, nothing counted twice), `pushtrack verify` must be
# clean, and every eventId that got a 200 must be in the raw event log. Exit 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
REPORTS=${REPORTS:-200000}
CRASH_AFTER=${CRASH_AFTER:-5}

bench_name=crash
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
sim="$(dirname "$bin")/pushtrack-sim"

# Runs the simulator in the background, does "$@" CRASH_AFTER seconds in, waits for it and
# checks the acknowledged eventIds.
run_with() {
    local name=$1 seed=$2
    shift 2
    echo "crash: $name, $REPORTS reports" >&2
    "$sim" --pushtrack "$bin" --url "http://127.0.0.1:$http_port" --reports "$REPORTS" \
        --seed "$seed" --workers 32 --single-share 0.1 --quiet --ack-log "$work/$name.acks" \
        >"$work/$name.txt" &
    local sim_pid=$!
    sleep "$CRASH_AFTER"
    "$@"
    local status=0
    wait "$sim_pid" || status=$?
    if [[ "$status" == 0 ]]; then
        grep -E '^(traffic|PASS|FAIL|pushtrack verify)' "$work/$name.txt"
    else
        grep -vE '  ok$' "$work/$name.txt"
    fi
    chmod 644 "$work/$name.acks"
    local missing
    missing=$(psql "$DATABASE_URL" -tA -c "CREATE TEMP TABLE acked (event_id text)" \
        -c "\\copy acked FROM '$work/$name.acks'" \
        -c "SELECT count(*) FROM acked a WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = a.event_id)" | tail -1)
    echo "crash: $name: $(wc -l <"$work/$name.acks") acknowledged eventIds, $missing missing from the raw log" >&2
    [[ "$status" == 0 && "$missing" == 0 ]] || { echo "crash: $name FAILED" >&2; exit 1; }
}

kill_collector() {
    echo "crash: kill -9 of the collector (pid $server_pid)" >&2
    kill -9 "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    sleep 1
    start_server
}

stop_postgres() {
    echo "crash: pg_ctl stop -m immediate" >&2
    scripts/pg.sh stop "$work/pg" immediate
    sleep 2
    scripts/pg.sh start "$work/pg" "$pg_port" >/dev/null
}

start_server
[[ -n "${SKIP_KILL:-}" ]] || run_with collector-killed 1 kill_collector
run_with postgres-stopped 2 stop_postgres
echo "crash: both runs exact, nothing acknowledged was lost" >&2
