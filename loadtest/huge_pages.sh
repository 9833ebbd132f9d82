#!/usr/bin/env bash
# PostgreSQL's shared memory in huge pages or in normal ones, on the cost curve's stored state
# (README "Production: PostgreSQL settings"). Builds in release mode, starts a fresh PostgreSQL
# with shared_buffers at a quarter of the memory and the huge pages it needs reserved
# (vm.nr_hugepages, given back on exit), loads loadtest/cost_curve.sh's stored state (20 M
# reports by default), then for each word of ORDER restarts PostgreSQL with huge_pages set to
# it, reads the indexes ingestion writes into the buffers (pg_prewarm) and runs the cost curve's
# load for DURATION s: events/s, and CPU per event of PostgreSQL and of the collector. Each run
# adds about a million reports to the state, so the settings alternate (A B B A A B) and the
# means are compared. Needs root (vm.nr_hugepages). Figures, not a test: exits 0; about 20
# minutes on the 2-core machine. Environment: ORDER ("off on on off off on"), and
# loadtest/cost_state.sh's DURATION, BATCH, DELIVERIES, PER_MESSAGE and PG_SETTINGS.
set -euo pipefail
cd "$(dirname "$0")/.."
ORDER=${ORDER:-off on on off off on}
# shellcheck source=loadtest/cost_state.sh
source loadtest/cost_state.sh
huge_pages=1
bench_name=huge-pages
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
load_json=$("$bin" app create load --format json)
key=$(json_field writeKey <<<"$load_json")
echo "huge pages: loading the stored state" >&2
load_stored_state "$(create_app stored appId)" "$(json_field appId <<<"$load_json")"

: >"$work/runs"
autovacuums="SELECT sum(autovacuum_count + autoanalyze_count) FROM pg_stat_user_tables"
for setting in $ORDER; do
    # Each run leaves a million rows that autovacuum would visit during a later run (the raw
    # partition's threshold is a fifth of its rows), at the cost of that run: vacuumed here
    # instead, and the autovacuums during the run are counted.
    psql "$DATABASE_URL" -qc "VACUUM (ANALYZE) events, report_keys, deliveries" \
        -c "ALTER SYSTEM SET huge_pages = $setting"
    scripts/pg.sh stop "$work/pg" fast
    scripts/pg.sh start "$work/pg" "$pg_port"
    held=$(huge_pages_in_use)
    prewarm_ingestion_indexes >/dev/null
    start_server
    echo "huge pages: huge_pages = $setting ($held huge pages held), ${DURATION}s" >&2
    vacuums0=$(psql "$DATABASE_URL" -tAc "$autovacuums")
    read -r rate fpi wal checkpoints pg collector _ <<<"$(ingest "$setting")"
    vacuums=$(($(psql "$DATABASE_URL" -tAc "$autovacuums") - vacuums0))
    echo "$setting $rate $fpi $wal $checkpoints $pg $collector $held $vacuums" | tee -a "$work/runs" >&2
    kill "$server_pid" && wait "$server_pid" 2>/dev/null || true
    server_pid=""
done

python3 - "$work/runs" <<'PY'
import collections, statistics, sys
runs = [line.split() for line in open(sys.argv[1])]
print(f"\n{'run':4} {'huge_pages':10} {'events/s':>9} {'PG µs/event':>12} {'collector':>10} "
      f"{'images':>7} {'WAL B':>6} {'pages held':>10} {'autovacuums':>11}")
by = collections.defaultdict(list)
for n, (setting, rate, fpi, wal, checkpoints, pg, collector, held, vacuums) in enumerate(runs, 1):
    print(f"{n:<4} {setting:10} {int(rate):9,} {float(pg):12.1f} {float(collector):10.1f} "
          f"{fpi:>7} {int(wal):6,} {int(held):10,} {int(vacuums):11}")
    by[setting].append((int(rate), float(pg)))
print()
for setting, values in by.items():
    print(f"mean, huge_pages = {setting:4} {statistics.mean(r for r, _ in values):9,.0f} events/s, "
          f"PostgreSQL {statistics.mean(p for _, p in values):.1f} µs per event")
if {"on", "off"} <= by.keys():
    on, off = (statistics.mean(r for r, _ in by[s]) for s in ("on", "off"))
    print(f"on / off: {on / off:.2f}")
PY
