#!/usr/bin/env bash
# How often the collector's threads sleep and are preempted under load, and their CPU, per event
# stored (loadtest/README.md, "answers resumed together"). Builds in release mode, starts a fresh
# PostgreSQL and a collector, warms up, then runs DURATION seconds of BATCH-event requests (wrk,
# 64 connections) and prints, per thread kind (threads named alike summed), the voluntary
# context switches (the thread slept: waited in poll, a lock, a semaphore), the involuntary ones
# (preempted by another runnable thread) and the CPU time, each per event stored, read from
# /proc/<pid>/task before and after. Environment: BATCH (1), DURATION (8). Figures, not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
BATCH=${BATCH:-1}
DURATION=${DURATION:-8}

bench_name=thread-switches
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
key=$(create_app switches writeKey)
start_server
load() {
    PT_KEY=$key PT_BATCH=$BATCH wrk -t2 -c64 -d"$1"s -s loadtest/events.lua \
        "http://127.0.0.1:$http_port" >/dev/null
}
# Per thread kind: voluntary and involuntary switches and CPU ticks, summed.
snapshot() {
    for task in /proc/"$server_pid"/task/*; do
        echo "$(cat "$task/comm")" \
            "$(awk '/^voluntary_ctxt_switches/ {print $2}' "$task/status")" \
            "$(awk '/^nonvoluntary_ctxt_switches/ {print $2}' "$task/status")" \
            "$(awk '{print $14 + $15}' "$task/stat")"
    done | awk '{kind = $1; sub(/-[0-9]+$/, "", kind); v[kind] += $2; i[kind] += $3; c[kind] += $4}
                END {for (k in v) print k, v[k], i[k], c[k]}' | sort
}
stored() { psql "$DATABASE_URL" -tAc "SELECT count(*) FROM events"; }
load 3
before_events=$(stored)
snapshot >"$work/before"
load "$DURATION"
snapshot >"$work/after"
events=$(($(stored) - before_events))
ticks=$(getconf CLK_TCK)
echo
echo "thread switches: $events events stored in ${DURATION} s of $BATCH-event requests"
printf '%-20s %14s %14s %12s\n' "threads" "slept/event" "preempted/event" "CPU µs/event"
join "$work/before" "$work/after" |
    awk -v events="$events" -v ticks="$ticks" '($7 - $4) > 0 {
        printf "%-20s %14.3f %14.3f %12.1f\n", $1, ($5 - $2) / events, ($6 - $3) / events,
            ($7 - $4) * 1e6 / ticks / events }'
