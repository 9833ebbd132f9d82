#!/usr/bin/env bash
# Do the writers wait on each other? (issues 3 and 4: several writers, of one server or of many,
# must add up without queueing behind one another.) Builds in release mode, starts a fresh
# PostgreSQL and a collector, and for MESSAGES (97, then 1: one message blasted to every device,
# the common push campaign) runs single-event requests at 64 connections for DURATION seconds
# while sampling what the writers' sessions wait on (pg_stat_activity, every 20 ms):
#   Lock      a row lock held by another writer's transaction (until that one commits);
#   IO / LWLock, Client, none (running)  everything else.
# Prints requests/s and the share of samples per wait. Figures, not a test: exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
MESSAGES=${MESSAGES:-97 1}

bench_name=contention
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
key=$(create_app contention writeKey)
start_server --log-level warning

printf '\n%-10s %10s %8s %8s %8s %8s %8s\n' messages "req/s" Lock IO LWLock Client running
for messages in $MESSAGES; do
    PT_KEY=$key PT_MESSAGES=$messages PT_BATCH=1 wrk -t2 -c64 -d3s -s loadtest/events.lua \
        "http://127.0.0.1:$http_port" >/dev/null
    PT_KEY=$key PT_MESSAGES=$messages PT_BATCH=1 wrk -t2 -c64 -d"$DURATION"s \
        -s loadtest/events.lua "http://127.0.0.1:$http_port" >"$work/wrk.out" &
    wrk_pid=$!
    sleep 1
    # One psql session samples for DURATION - 2 seconds; only writers inside a statement count.
    samples=$(python3 -c "print(int(($DURATION - 2) / 0.02))")
    python3 - "$samples" >"$work/sample.sql" <<'PY'
import sys
for _ in range(int(sys.argv[1])):
    print("SELECT coalesce(wait_event_type, 'running') FROM pg_stat_activity "
          "WHERE application_name = 'pushtrack-writer' AND state = 'active';")
    print("SELECT pg_sleep(0.02);")
PY
    psql "$DATABASE_URL" -qtA -f "$work/sample.sql" | grep -v '^$' >"$work/waits.txt" || true
    wait "$wrk_pid"
    rps=$(sed -n 's/.*rps=\([0-9.]*\).*/\1/p' "$work/wrk.out")
    python3 - "$messages" "$rps" "$work/waits.txt" <<'PY'
import collections, sys
waits = collections.Counter(line.strip() for line in open(sys.argv[3]) if line.strip())
total = sum(waits.values()) or 1
share = lambda k: f"{100 * waits[k] / total:.0f}%"
print(f"{sys.argv[1]:<10} {float(sys.argv[2]):>10,.0f} {share('Lock'):>8} {share('IO'):>8} "
      f"{share('LWLock'):>8} {share('Client'):>8} {share('running'):>8}")
PY
done
