#!/usr/bin/env bash
# Where the CPU of ingestion goes, by statement and by process (issue 17's floor): CPU time,
# not wall time, so it holds on a busy machine. Builds in release mode, starts a fresh
# PostgreSQL and a collector, warms up, then runs DURATION seconds of BATCH-event requests (wrk,
# CONNECTIONS connections) with PostgreSQL's log_statement_stats on, and prints per event:
#   - PostgreSQL's CPU in each statement (parse, bind and execute apart; the rusage PostgreSQL
#     logs for every message), and per call;
#   - the CPU of each PostgreSQL backend kind (the writers' sessions, the compactor's, the rest)
#     and of each kind of collector thread (libmicrohttpd's workers, the writers, the rest);
#   - events per group commit.
# pg_stat_statements times statements in wall time, which counts the waits of a busy machine
# and, for COPY, the round trips of its data; this counts CPU only.
# Environment: BATCH (1), DURATION (5), CONNECTIONS (64: requests in flight, which set the
# group commits' size), WRITERS (the server's --writers; unset: its default),
# SETUP_SQL (SQL run once the server is up, before the warm-up: a setting or a storage
# parameter to try), REPORT_SQL (a query run after the load, its result printed: the counters
# of that trial), and events.lua's PT_MESSAGES, PT_DEVICES and PT_CAMPAIGNS (the load's shape).
# Figures, not a test: exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-5}
BATCH=${BATCH:-1}
CONNECTIONS=${CONNECTIONS:-64}

bench_name=statements
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
key=$(create_app statements writeKey)
start_server ${WRITERS:+--writers "$WRITERS"}
[[ -z ${SETUP_SQL:-} ]] || psql "$DATABASE_URL" -qc "$SETUP_SQL"
PT_KEY=$key PT_BATCH=$BATCH wrk -t2 -c"$CONNECTIONS" -d3s -s loadtest/events.lua "http://127.0.0.1:$http_port" >/dev/null

# Cumulative CPU ticks of every thread of process $1: "comm<TAB>ticks" lines.
threads() {
    for stat in /proc/"$1"/task/*/stat; do
        awk '{sub(/.*\) /, ""); print $12 + $13}' "$stat" | paste <(sed 's/.*(\(.*\)).*/\1/' "$stat") -
    done
}
# Cumulative CPU ticks of every PostgreSQL backend, labelled by its application_name (or its
# backend type): "label<TAB>ticks" lines.
backends() {
    psql "$DATABASE_URL" -tA -F$'\t' -c "SELECT pid, coalesce(nullif(application_name, ''), backend_type) FROM pg_stat_activity" |
        while IFS=$'\t' read -r pid label; do
            [[ -r /proc/$pid/stat ]] || continue
            printf '%s\t%s\n' "$label" "$(awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$pid/stat")"
        done
}
commits() { curl -s "localhost:$http_port/metrics" | awk '/^pushtrack_commit_events_(sum|count) /{printf "%s ", $2}'; }

threads "$server_pid" >"$work/threads0"
backends >"$work/backends0"
commits0=$(commits)
events0=$(psql "$DATABASE_URL" -tAc "SELECT count(*) FROM events")
: >"$work/pg/server.log"
psql "$DATABASE_URL" -qc "ALTER SYSTEM SET log_statement_stats = on" -c "SELECT pg_reload_conf()" >/dev/null
echo "statements: $BATCH-event requests, $CONNECTIONS connections, ${DURATION}s" >&2
PT_KEY=$key PT_BATCH=$BATCH wrk -t2 -c"$CONNECTIONS" -d"$DURATION"s -s loadtest/events.lua "http://127.0.0.1:$http_port" | grep '^RESULT' || true
psql "$DATABASE_URL" -qc "ALTER SYSTEM RESET log_statement_stats" -c "SELECT pg_reload_conf()" >/dev/null
events=$(($(psql "$DATABASE_URL" -tAc "SELECT count(*) FROM events") - events0))
threads "$server_pid" >"$work/threads1"
backends >"$work/backends1"
commits1=$(commits)
[[ -z ${REPORT_SQL:-} ]] || psql "$DATABASE_URL" -c "$REPORT_SQL"

python3 loadtest/statement_stats.py "statements=$work/pg/server.log:$events"
python3 - "$work" "$events" "$tick" "$commits0" "$commits1" <<'PY'
import collections, sys
work, events, tick = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
c0, c1 = [float(x) for x in sys.argv[4].split()], [float(x) for x in sys.argv[5].split()]
per_event = lambda seconds: seconds / events * 1e6

def ticks(name, classify):
    total = collections.Counter()
    for line in open(f"{work}/{name}"):
        label, value = line.rstrip("\n").rsplit("\t", 1)
        total[classify(label)] += int(value)
    return total

def delta(name, classify):
    before, after = ticks(name + "0", classify), ticks(name + "1", classify)
    return {k: (after[k] - before.get(k, 0)) / tick for k in after}

print(f"\n{events:,} events, {(c1[0] - c0[0]) / max(1, c1[1] - c0[1]):.1f} per group commit")


def table(title, name, classify):
    print(f"\n{title:68} {'µs/event':>9}")
    for label, seconds in sorted(delta(name, classify).items(), key=lambda item: -item[1]):
        print(f"{label:68} {per_event(seconds):9.1f}")

table("PostgreSQL CPU by backend", "backends",
      lambda label: "writers" if label == "pushtrack-writer" else
      "compactor and other pushtrack sessions" if label.startswith("pushtrack") else
      "background processes")
table("collector CPU by thread", "threads",
      lambda comm: "HTTP: libmicrohttpd workers (parse, route, decode, answer)" if comm == "MHD-worker" else
      "group-commit writers (statements, results, answers)" if comm.startswith("writer-") else
      "the rest (compactor, pools, monitors)")
PY
