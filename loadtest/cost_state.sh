# Sourced (before loadtest/fresh.sh) by loadtest/cost_curve.sh and loadtest/huge_pages.sh: the
# cost curve's load, its stored state and PostgreSQL's buffers for it.
# Reads DURATION (20), BATCH (50), DELIVERIES (10,000,000), PER_MESSAGE (2,600), STATEMENTS,
# TRUNCATE_DELTAS (1, load_stored_state) and PG_SETTINGS from the environment, and key (the load
# app's write key) when ingest runs.
# shellcheck shell=bash
DURATION=${DURATION:-20}
BATCH=${BATCH:-50}
DELIVERIES=${DELIVERIES:-10000000}
PER_MESSAGE=${PER_MESSAGE:-2600}

# A database holding 20 M reports is a production one, with PostgreSQL's own advice for its
# buffers: a quarter of the machine's memory (README, "Production: PostgreSQL settings"; 6 GB
# here), not scripts/pg.sh's 256 MB for throwaway clusters. PG_SETTINGS may override it
# (PG_SETTINGS="shared_buffers=256MB" measures the small buffers).
quarter_mb=$(awk '/^MemTotal:/ {print int($2 / 4 / 1024)}' /proc/meminfo)
PG_SETTINGS="shared_buffers=${quarter_mb}MB ${PG_SETTINGS:-}"

# DURATION s of the load ($1 names the run: empty or stored); prints the events stored per
# second (counted in the raw table, after the writers have answered every request), then what
# PostgreSQL wrote meanwhile: full-page images and bytes of WAL per event, and the checkpoints;
# then the CPU per event of PostgreSQL (every process of the cluster) and of the collector, in
# µs, then the blocks PostgreSQL read into its buffers per event (pg_stat_database's blks_read:
# from the kernel's page cache or the disk; a backend reports its counts within a second, so
# the last second's may be missing). With STATEMENTS=1, PostgreSQL logs the rusage of every
# statement meanwhile (log_statement_stats, as loadtest/statement_cpu.sh; it costs some of the
# rate, in both runs), kept in $work/statements-$1.log with the events in
# $work/statements-$1.events.
ingest() {
    local before after pg0 collector0 pg1 collector1
    PT_KEY=$key PT_BATCH=$BATCH wrk -t2 -c64 -d3s -s loadtest/events.lua "http://127.0.0.1:$http_port" >/dev/null
    before=$(psql "$DATABASE_URL" -tA -F' ' -c "$written")
    if [[ ${STATEMENTS:-0} == 1 ]]; then
        : >"$work/pg/server.log"
        psql "$DATABASE_URL" -qc "ALTER SYSTEM SET log_statement_stats = on" -c "SELECT pg_reload_conf()" >/dev/null
    fi
    pg0=$(pg_cpu)
    collector0=$(proc_cpu "$server_pid")
    PT_KEY=$key PT_BATCH=$BATCH wrk -t2 -c64 -d"$DURATION"s -s loadtest/events.lua "http://127.0.0.1:$http_port" >/dev/null
    # The CPU before the count: counting 20 M rows costs PostgreSQL about 2 µs per event of the run.
    pg1=$(pg_cpu)
    collector1=$(proc_cpu "$server_pid")
    if [[ ${STATEMENTS:-0} == 1 ]]; then
        psql "$DATABASE_URL" -qc "ALTER SYSTEM RESET log_statement_stats" -c "SELECT pg_reload_conf()" >/dev/null
        cp "$work/pg/server.log" "$work/statements-$1.log"
    fi
    after=$(psql "$DATABASE_URL" -tA -F' ' -c "$written")
    [[ ${STATEMENTS:-0} == 0 ]] || echo $((${after%% *} - ${before%% *})) >"$work/statements-$1.events"
    python3 - "$before" "$after" "$DURATION" "$pg1 $pg0" "$collector1 $collector0" <<'PY'
import sys
(e0, f0, w0, c0, r0), (e1, f1, w1, c1, r1) = (map(int, a.split()) for a in sys.argv[1:3])
events = e1 - e0
pg, collector = ((float(a) - float(b)) / events * 1e6 for a, b in (x.split() for x in sys.argv[4:6]))
print(round(events / int(sys.argv[3])), f"{(f1 - f0) / events:.2f}", (w1 - w0) // events, c1 - c0,
      f"{pg:.1f}", f"{collector:.1f}", f"{(r1 - r0) / events:.2f}")
PY
}
written="SELECT (SELECT count(*) FROM events), wal_fpi, wal_bytes::bigint,
                (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter),
                (SELECT blks_read FROM pg_stat_database WHERE datname = current_database())
           FROM pg_stat_wal"

# Reads the indexes that ingestion writes into PostgreSQL's buffers (pg_prewarm): the app's
# report keys, the deliveries, the messages and the raw log's partitions. A server that has
# ingested for weeks holds them there, since every claim, merge and raw row touches a random
# page of each; one whose state was just loaded by SQL holds whatever the load touched last.
# Prints the blocks read.
prewarm_ingestion_indexes() {
    psql "$DATABASE_URL" -qc "CREATE EXTENSION IF NOT EXISTS pg_prewarm"
    psql "$DATABASE_URL" -qtAc "SELECT sum(pg_prewarm(i.indexrelid)) FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
                                WHERE t.relname IN ('report_keys', 'deliveries', 'messages') OR t.relname LIKE 'events_p%'"
}

# Loads the stored state with SQL, not HTTP: the report benchmark's campaign at DELIVERIES
# deliveries in app $1 (loadtest/report_bench.sql, with its aggregates and raw events: an app of
# its own, since it declares a conversion category, which would change the load's path) and, in
# the load's app $2, 1,980 other messages of PER_MESSAGE deliveries to the load's devices
# (loadtest/cost_curve.sql), a report key (a random UUID eventId, as the load's) for every stored
# report. Every index is keyed by app first, so state stored under another app would leave the
# load's inserts in a corner of each index of their own, as on an empty database.
load_stored_state() {
    local t0
    t0=$(psql "$DATABASE_URL" -tAc "SELECT date_trunc('hour', now() - interval '2 hours')")
    psql "$DATABASE_URL" -q -v app="$1" -v t0="$t0" -v deliveries="$DELIVERIES" -v conversions=false \
        -f loadtest/report_bench.sql
    psql "$DATABASE_URL" -qtAc "SELECT pushtrack_compact_report_deltas() + pushtrack_compact_delivery_deltas()" >/dev/null
    # That fold emptied a rollup delta table of millions of rows. Its empty pages would stay
    # (vacuum_truncate is off for it, sql/013), and each part's fold in (3) would read them all
    # (219 MB at DELIVERIES=1000000; at the default, the fold cost 16.8 µs of PostgreSQL's CPU
    # per event more in (3) than in (1), 2026-12-08). A server that folds every second never
    # grows the table so: this gives its pages back, as before (1). (TRUNCATE_DELTAS=0: not.)
    [[ ${TRUNCATE_DELTAS:-1} == 0 ]] || psql "$DATABASE_URL" -qc "VACUUM (TRUNCATE) report_deltas"
    psql "$DATABASE_URL" -q -v app="$2" -v t0="$t0" -v per_message="$PER_MESSAGE" -f loadtest/cost_curve.sql
    # A database that grew over weeks has its pages on disk; one loaded in minutes has gigabytes
    # of them still to write, and the kernel writing them back takes CPU from the next run (bo
    # 100-150 k blocks/s and 2.2 GB dirty in a scratch run). A checkpoint and a sync write them
    # first, and start that run at the costliest point of the checkpoint cycle, where each page's
    # first change writes its full image to the WAL.
    psql "$DATABASE_URL" -qc CHECKPOINT
    sync
}
