#!/usr/bin/env bash
# What sets the p99 at half the maximum rate (issue 17), on one server and one fresh PostgreSQL,
# each comparison in alternating runs (A B B A A B) so that the box's drift falls on both sides:
#   (1) single events at half of the flat-out rate, with WAL segments ready for reuse (as
#       loadtest/fresh.sh makes them for every benchmark) against segments made while the
#       commits wait (80 fresh segments written and no checkpoint between: scripts/pg.sh's
#       max_wal_size, 16 GB, is far from reached, so none comes by itself);
#   (2) 50-event batches: alone (20 requests/s), then at half of the flat-out rate with the
#       server's fold every second as usual, with no fold (its advisory locks held from psql;
#       the reports stay exact, the deltas wait), and with an extra fold every 250 ms beside it.
# Ends with the size of report_keys and the buffers the backends wrote themselves.
# Figures, not a test: it exits 0. Environment: DURATION (seconds per run, 10).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}

bench_name=half-rate warm_wal=0
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
key=$(create_app half-rate writeKey)
start_server

# Prints "label: rps=… p50=… p99=… max=…" for the RESULT line $2.
show() { echo "$1: rps=$(field "$2" rps) p50=$(field "$2" p50_ms) p99=$(field "$2" p99_ms) max=$(field "$2" max_ms)"; }

echo "half-rate: (1) single events, flat out, then half of it" >&2
run_wrk 1 0 3 >/dev/null
a=$(run_wrk 1 0 "$DURATION")
show "single events flat out" "$a"
half=$(half_rate "$a")
for segments in new ready ready new new ready; do
    if [[ $segments == ready ]]; then ready_wal_segments; else wal_segments 80; fi
    show "single events at $half/s, $segments WAL segments" "$(run_wrk 1 "$half" "$DURATION")"
done
ready_wal_segments

echo "half-rate: (2) 50-event batches" >&2
run_wrk 50 0 3 >/dev/null
show "batches alone (20/s)" "$(run_wrk 50 20 "$DURATION")"
b=$(run_wrk 50 0 "$DURATION")
show "batches flat out" "$b"
half=$(half_rate "$b")
fold="SELECT pushtrack_compact_report_deltas() + pushtrack_compact_conversion_deltas() + pushtrack_compact_delivery_deltas()"
for fold_mode in usual none usual extra extra none; do
    helper=""
    case $fold_mode in
    none)
        psql "$DATABASE_URL" -qtA -c "SELECT pg_advisory_lock(hashtext(k)) FROM unnest(ARRAY['pushtrack_compact_report_deltas', 'pushtrack_compact_conversion_deltas', 'pushtrack_compact_delivery_deltas']) k" \
            -c "SELECT pg_sleep($DURATION + 1)" >/dev/null &
        helper=$! ;;
    extra)
        for _ in $(seq $((DURATION * 4 + 2))); do echo "$fold;"; echo "SELECT pg_sleep(0.25);"; done |
            psql "$DATABASE_URL" -qtA >/dev/null &
        helper=$! ;;
    esac
    sleep 0.5
    show "batches at $half/s, fold $fold_mode" "$(run_wrk 50 "$half" "$DURATION")"
    if [[ -n $helper ]]; then wait "$helper"; fi
    psql "$DATABASE_URL" -qtAc "$fold" >/dev/null  # what a held-back fold left
done

psql "$DATABASE_URL" -tA -F' ' -c "SELECT 'reports stored ' || (SELECT count(*) FROM report_keys) || ', report_keys ' || pg_size_pretty(pg_total_relation_size('report_keys')) || ' (' || pg_total_relation_size('report_keys') / greatest((SELECT count(*) FROM report_keys), 1) || ' bytes a key), buffers written by backends ' || buffers_backend FROM pg_stat_bgwriter"
