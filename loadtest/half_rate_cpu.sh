#!/usr/bin/env bash
# What an event costs at half rate against flat out: bench.sh's (b) and (hb) (50-event batches
# flat out for DURATION seconds, then paced to half that rate after SETTLE seconds), and for each
# window the on-CPU time and run-queue wait per event of the writers' and the other pushtrack
# PostgreSQL sessions (/proc/PID/schedstat), the collector's CPU, the whole box's busy CPU and
# idle share, and the events per group commit. SERVER_FLAGS go to `pushtrack serve`
# (fresh.sh's start_server).
# Figures, not a test: exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
SETTLE=${SETTLE:-2}

bench_name=half_rate_cpu
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
app_json=$("$bin" app create bench --format json)
key=$(json_field writeKey <<<"$app_json")
start_server
declare_conversion "$(json_field appId <<<"$app_json")"
run_wrk 1 0 3 >/dev/null

psql "$DATABASE_URL" -tA -F' ' \
    -c "SELECT pid, application_name FROM pg_stat_activity WHERE application_name LIKE 'pushtrack%'" >"$work/pids"
# "name run_ns wait_ns" per session kind, the collector's ticks, and the box's busy and idle ticks.
sample() {
    {
        while read -r pid name; do
            echo "$name $(cut -d' ' -f1,2 "/proc/$pid/schedstat")"
        done <"$work/pids"
        echo "collector $(awk '{print $14 + $15, 0}' "/proc/$server_pid/stat")"
        echo "box $(awk '/^cpu /{print $2 + $3 + $4 + $6 + $7 + $8, $5}' /proc/stat)"
    } | awk '{run[$1] += $2; wait[$1] += $3} END {for (k in run) print k, run[k], wait[k]}' | sort
}
commits() { curl -s "localhost:$http_port/metrics" | awk '/^pushtrack_commit_events_count /{print $2}'; }
events() { psql "$DATABASE_URL" -tAc "SELECT count(*) FROM events"; }
# One window: label, batch size, rate (0: flat out). Leaves wrk's RESULT line in $result.
window() {
    local e0 c0 e1 c1
    e0=$(events) c0=$(commits)
    sample >"$work/before"
    result=$(run_wrk "$2" "$3" "$DURATION")
    sample >"$work/after"
    e1=$(events) c1=$(commits)
    local n=$((e1 - e0))
    printf '%s: %s req/s, p99 %s ms, %d events, %.1f per group commit\n' "$1" \
        "$(field "$result" rps)" "$(field "$result" p99_ms)" "$n" \
        "$(python3 -c "print($n / max(1, $c1 - $c0))")"
    join "$work/before" "$work/after" | awk -v n="$n" -v hz="$(getconf CLK_TCK)" '
        $1 == "collector" { printf "  %-18s %6.1f µs/event CPU\n", $1, ($4 - $2) * 1e6 / hz / n; next }
        $1 == "box" { printf "  %-18s %6.1f µs/event busy, %.0f %% idle\n", $1, ($4 - $2) * 1e6 / hz / n,
                              100 * ($5 - $3) / (($4 - $2) + ($5 - $3)); next }
        { printf "  %-18s %6.1f µs/event on CPU, %6.1f waiting for one\n", $1, ($4 - $2) / 1e3 / n, ($5 - $3) / 1e3 / n }'
}
window "(b) flat out" 50 0
half=$(half_rate "$result")
run_wrk 50 "$half" "$SETTLE" >/dev/null
window "(hb) half rate" 50 "$half"
