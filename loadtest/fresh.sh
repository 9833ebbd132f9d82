# Sourced by the benchmarks (and scripts/schemathesis.sh, scripts/dashboard-screenshots.sh): the
# packages they need, a build and a fresh PostgreSQL of their own, removed on exit.
# Reads: bench_name (folder prefix), build_configuration (release), deps_option (--bench),
# warm_wal (1: the WAL made ready as on a server that has run a while, below; 0: not), and from
# the environment PG_SETTINGS: PostgreSQL settings to use instead of scripts/pg.sh's, as
# name=value words (e.g. "shared_buffers=6GB", or "max_wal_size=1GB wal_compression=off" for
# PostgreSQL's defaults), set with ALTER SYSTEM and a restart before anything runs; SERVER_FLAGS:
# flags every start_server adds (below); huge_pages (0; 1: the cluster's shared memory in huge
# pages, reserved for it with vm.nr_hugepages and given back on exit, as README "Production:
# PostgreSQL settings" advises for large shared_buffers; PostgreSQL's huge_pages = try uses them).
# Sets: bin, work, pg_port, http_port, DATABASE_URL (exported), wal_ready_lsn (below),
# huge_pages_held (with huge_pages=1: the huge pages in use once PostgreSQL started) and
# server_pid for a server the script starts (stopped on exit).
# shellcheck shell=bash

# shellcheck disable=SC2086  # deps_option is one word or none
scripts/deps.sh ${deps_option---bench}
# Many connections (the overload and slow-client runs): as many descriptors as allowed.
ulimit -n "$(ulimit -Hn)"
swift build -c "${build_configuration:-release}" >/dev/null
bin="$(swift build -c "${build_configuration:-release}" --show-bin-path)/pushtrack"

work=$(mktemp -d "/tmp/pushtrack-${bench_name:-bench}.XXXXXX")
chmod 755 "$work"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pg_port=$(free_port)
http_port=$(free_port)
server_pid=""
cleanup() {
    [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    scripts/pg.sh stop "$work/pg" immediate || true
    [[ -z ${huge_pages_before:-} ]] || echo "$huge_pages_before" >/proc/sys/vm/nr_hugepages 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The huge pages in use or promised (what a running PostgreSQL holds, when nothing else has any).
huge_pages_in_use() {
    awk '/^HugePages_(Total|Free|Rsvd):/ {n[$1] = $2}
         END {print n["HugePages_Total:"] - n["HugePages_Free:"] + n["HugePages_Rsvd:"]}' /proc/meminfo
}
# Reserves the huge pages the stopped cluster needs, on top of those reserved already (restored
# on exit); says so when the kernel does not give them all (PostgreSQL then uses normal pages).
reserve_huge_pages() {
    local need total
    need=$(scripts/pg.sh hugepages "$work/pg")
    huge_pages_before=$(cat /proc/sys/vm/nr_hugepages)
    echo $((huge_pages_before + need)) >/proc/sys/vm/nr_hugepages 2>/dev/null || true
    total=$(cat /proc/sys/vm/nr_hugepages)
    echo "${bench_name:-bench}: $((total - huge_pages_before)) of $need huge pages reserved for PostgreSQL" >&2
}

scripts/pg.sh start "$work/pg" "$pg_port"
export DATABASE_URL
DATABASE_URL=$(scripts/pg.sh url "$pg_port")
if [[ -n ${PG_SETTINGS:-} || ${huge_pages:-0} == 1 ]]; then
    for setting in ${PG_SETTINGS:-}; do
        psql "$DATABASE_URL" -qc "ALTER SYSTEM SET ${setting%%=*} = '${setting#*=}'"
    done
    scripts/pg.sh stop "$work/pg" fast
    if [[ ${huge_pages:-0} == 1 ]]; then reserve_huge_pages; fi
    scripts/pg.sh start "$work/pg" "$pg_port"
    if [[ ${huge_pages:-0} == 1 ]]; then
        huge_pages_held=$(huge_pages_in_use)
        echo "${bench_name:-bench}: PostgreSQL holds $huge_pages_held huge pages" >&2
    fi
    for setting in ${PG_SETTINGS:-}; do
        echo "${bench_name:-bench}: ${setting%%=*} $(psql "$DATABASE_URL" -tAc "SHOW ${setting%%=*}")" >&2
    done
fi
"$bin" migrate >/dev/null
# Writes $1 new WAL segments (16 MB each): a tiny record, then a switch to the next segment.
wal_segments() {
    psql "$DATABASE_URL" -qtAc "SELECT count(pg_switch_wal()) FROM (SELECT pg_logical_emit_message(false, 'warm', '') FROM generate_series(1, $1)) s" >/dev/null
}
# A new cluster creates each 16 MB WAL segment as it fills the last one, writing it full of
# zeros and syncing it, and every commit waits the ~90 ms that takes (at half of the single-event
# maximum, one segment every 2-3 s: enough to set the p99). A server that has run a while reuses
# old segments instead (README "Production: PostgreSQL settings"): the benchmarks measure that
# steady state, so 2 GB of segments is made here (~5 s), and a checkpoint makes them ready ones
# (the checkpoint keeps all of them: scripts/pg.sh's min_wal_size is 1 GB, and PostgreSQL keeps
# what the last cycle used). 2 GB, not 1: a run of loadtest/bench.sh writes about 1.1 GB (1.3 KB
# per report, 890,000 reports), and with 1 GB the segments ran out before its half-rate batches
# (hb), whose commits then all waited ~57 ms every 0.7 s. loadtest/half_rate_latency.sh measures
# new segments against ready ones.
# Sets wal_ready_lsn: the WAL position (bytes) once the segments are ready.
ready_wal_segments() {
    wal_segments 128 && psql "$DATABASE_URL" -qc CHECKPOINT
    wal_ready_lsn=$(psql "$DATABASE_URL" -tAc "SELECT pg_current_wal_lsn() - '0/0'")
}
if [[ ${warm_wal:-1} == 1 ]]; then ready_wal_segments; fi

# Prints field $1 of the JSON object on standard input.
json_field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

# Creates an app named $1 and prints field $2 (writeKey or appId) of its JSON.
create_app() { "$bin" app create "$1" --format json | json_field "$2"; }

# Starts `pushtrack serve` on $http_port (extra flags as arguments, then the words of
# $SERVER_FLAGS from the environment, e.g. "--compaction-interval 0.25"), its log appended to
# $work/server.log, sets server_pid and waits until it is ready; exits 1 when it does not become
# ready within 30 s.
start_server() {
    # shellcheck disable=SC2086  # SERVER_FLAGS is words
    ${pin:-} "$bin" serve --port "$http_port" --bind 127.0.0.1 "$@" ${SERVER_FLAGS:-} 2>>"$work/server.log" &
    server_pid=$!
    for _ in $(seq 300); do curl -sf "localhost:$http_port/readyz" >/dev/null && return; sleep 0.1; done
    echo "the collector did not become ready; its log:" >&2
    tail -20 "$work/server.log" >&2
    exit 1
}

# With CONVERSION=<category> set, declares that conversion category for app $1 through the API
# of the server on $http_port (so that the writers track the app's devices, DESIGN.md 4b);
# nothing otherwise. The benchmarks' load stays the same: push events only.
declare_conversion() {
    [[ -n "${CONVERSION:-}" ]] || return 0
    local admin
    admin=$("$bin" token create --role admin --format json | json_field token)
    curl -sf -X PUT -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
        "localhost:$http_port/api/v1/apps/$1/conversions/$CONVERSION" -d '{}' >/dev/null
    echo "bench: conversion category $CONVERSION declared for $1" >&2
}

# The load and the baselines of issue 3, shared by the benchmarks. These and start_server run
# under the command prefix in $pin (e.g. "taskset -c 0"), when a script sets one.

# wrk with loadtest/events.lua against the server ($wrk_url, default the collector on
# $http_port): $1 events per request, $2 requests/s offered (0: flat out), $3 seconds,
# $CONNECTIONS (64) connections, write key $key; prints wrk's RESULT line.
run_wrk() {
    local threads=2
    PT_KEY=$key PT_BATCH=$1 PT_RATE=$2 PT_THREADS=$threads ${pin:-} wrk -t$threads -c"${CONNECTIONS:-64}" -d"$3"s \
        --timeout 10s -s loadtest/events.lua "${wrk_url:-http://127.0.0.1:$http_port}" |
        grep '^RESULT'
}
# For the profiles (collector_profile.sh, pg_profile.sh): installs perf when missing, starts the
# server with app $1's write key in $key, warms it up with 3 s of $BATCH-event requests
# (CONNECTIONS in flight, 64 by default), then starts $2 seconds more of them in the background
# (wrk's pid in wrk_pid).
profile_load() {
    command -v perf >/dev/null || { apt-get update -qq && apt-get install -y -qq linux-perf >/dev/null; }
    key=$(create_app "$1" writeKey)
    start_server
    PT_KEY=$key PT_BATCH=$BATCH wrk -t2 -c"${CONNECTIONS:-64}" -d3s -s loadtest/events.lua "http://127.0.0.1:$http_port" >/dev/null
    PT_KEY=$key PT_BATCH=$BATCH wrk -t2 -c"${CONNECTIONS:-64}" -d"$2"s -s loadtest/events.lua "http://127.0.0.1:$http_port" >/dev/null &
    wrk_pid=$!
}
# Field $2 of a RESULT line $1.
field() { sed -n "s/.* $2=\([0-9.]*\).*/\1/p" <<<"$1"; }
# The kernel's dirty page cache now, in kB (/proc/meminfo): a line for a sampler's file.
dirty_kb() { awk '/^Dirty:/ {print $2}' /proc/meminfo; }
# The peak of the dirty cache samples in file $1 and the largest drop between two samples: the
# kernel writing back, at once, data files first dirtied about 30 s before (loadtest/README.md).
dirty_summary() {
    awk 'NR > 1 && prev - $1 > burst {burst = prev - $1} $1 > peak {peak = $1} {prev = $1}
         END {printf "kernel dirty pages peak %.0f MB, ", peak / 1024
              printf "largest write-back between samples %.0f MB\n", burst / 1024}' "$1"
}
# Half the rate (requests/s) of the RESULT line $1 (a flat-out run), for run_wrk's $2.
half_rate() { python3 -c "print(round($(field "$1" rps) / 2))"; }

# Writes $2 rows shaped like the benchmark's events into the CSV file $1.
events_csv() { python3 loadtest/events_csv.py "$2" >"$1" && chmod 644 "$1"; }
# The raw table's columns that events_csv writes, in its order (one line: psql's \copy ends at
# a newline).
csv_columns="received_at, app_id, event_time, client_time, time_flag, event_id, report_key"
csv_columns+=", page_id, category, action, label, message_id, campaign_id, device_id, app_active"
csv_columns+=", source, properties, platform, os_version, app_version, build, locale"
csv_columns+=", notifications_enabled, outcome"
# (c): COPY of the CSV file $1 into the raw table, as psql's \copy does.
copy_events() {
    ${pin:-} psql "$DATABASE_URL" -qc "\\copy events ($csv_columns) FROM '$1' WITH (FORMAT csv)"
}
# (d): pgbench, 8 clients, one INSERT … ON CONFLICT DO NOTHING per transaction, for $1 seconds;
# prints the tps.
pgbench_insert() {
    cat >"$work/insert.sql" <<'SQL'
\set k random(1, 1000000000)
INSERT INTO report_keys (app_id, key_hash, first_seen) VALUES ('pgbench', md5('k' || :k)::uuid, now()) ON CONFLICT DO NOTHING;
SQL
    ${pin:-} pgbench -n -c 8 -j 2 -T "$1" -f "$work/insert.sql" "$DATABASE_URL" 2>/dev/null |
        sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

# CPU seconds process $1 has used so far (user and system).
proc_cpu() { awk -v t="$tick" '{print ($14 + $15) / t}' "/proc/$1/stat"; }
# The same in user mode alone (the rest, proc_cpu less this, is the kernel's work for it).
proc_user_cpu() { awk -v t="$tick" '{print $14 / t}' "/proc/$1/stat"; }

# Waits (at most 20 s) until the running server's compactor has packed every histogram change
# (sql/014: a message is packed once its changes are 200 rows or 10 s old), so that what is
# measured is a settled database, not the 10 s after a bulk load.
wait_packed() {
    for _ in $(seq 200); do
        [[ $(psql "$DATABASE_URL" -tAc "SELECT count(*) FROM message_histogram_changes") == 0 ]] && return
        sleep 0.1
    done
}

# GET $1 of the server on $http_port with $token REQUESTS times, one after another, after 20
# warm-up requests; the seconds of each, a line each, into file $2.
get_times() {
    local url="http://127.0.0.1:$http_port$1"
    for _ in $(seq 20); do curl -sf -o /dev/null -H "Authorization: Bearer $token" "$url"; done
    for _ in $(seq "$REQUESTS"); do
        curl -sf -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $token" "$url"
    done >"$2"
}

# CPU seconds the cluster's processes have used so far: the postmaster, its live children and,
# through the postmaster's child times, every backend that has exited.
tick=$(getconf CLK_TCK)
pg_cpu() {
    python3 - "$(head -1 "$work/pg/postmaster.pid")" "$tick" <<'PY'
import os, sys
root, tick = int(sys.argv[1]), int(sys.argv[2])
def fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()
total = sum(int(x) for x in fields(root)[11:15])  # utime stime cutime cstime
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != root:
        try:
            f = fields(pid)
        except OSError:
            continue
        if int(f[1]) == root:  # ppid
            total += int(f[11]) + int(f[12])
print(total / tick)
PY
}

# µs of PostgreSQL CPU per row for psql to run its arguments ($2…: -c "SQL" words) on an emptied
# raw table after a checkpoint, the run putting $1 rows in (copy_formats.sh, unnest_forms.sh).
insert_cpu_per_row() {
    local rows=$1 before
    shift
    psql "$DATABASE_URL" -qc "TRUNCATE events" -c "CHECKPOINT"
    before=$(pg_cpu)
    psql "$DATABASE_URL" -q "$@"
    python3 -c "print(f'{($(pg_cpu) - $before) / $rows * 1e6:.1f}')"
}
