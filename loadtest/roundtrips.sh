#!/usr/bin/env bash
# What a round trip to PostgreSQL costs, the fixed part of every group commit (issues 3 and 4).
# Starts a fresh PostgreSQL with the schema and runs three pgbench scripts, each one transaction
# that inserts one report key as (d) does:
#   1 round trip:  the INSERT alone (autocommit), exactly (d);
#   3 round trips: BEGIN, the INSERT, COMMIT;
#   8 round trips: BEGIN, the INSERT, five `SELECT 1`, COMMIT (a group commit's count);
# with 1 client and with 8, DURATION seconds each, and prints the transactions per second and
# PostgreSQL's CPU per transaction (all its processes, from /proc). The difference between the
# rows is the price of the extra round trips. Figures, not a test: exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-5}

bench_name=roundtrips
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh

key='\set k random(1, 1000000000)'
insert="INSERT INTO report_keys (app_id, key_hash, first_seen) VALUES ('rt', md5('k' || :k)::uuid, now()) ON CONFLICT DO NOTHING;"
printf '%s\n' "$key" "$insert" >"$work/rt1.sql"
printf '%s\n' "$key" "BEGIN;" "$insert" "COMMIT;" >"$work/rt3.sql"
printf '%s\n' "$key" "BEGIN;" "$insert" "SELECT 1;" "SELECT 1;" "SELECT 1;" "SELECT 1;" "SELECT 1;" \
    "COMMIT;" >"$work/rt8.sql"

printf '\n%-14s %8s %10s %26s\n' "round trips" clients "tx/s" "PostgreSQL CPU per tx (µs)"
for clients in 1 8; do
    for trips in 1 3 8; do
        before=$(pg_cpu)
        out=$(pgbench -n -c "$clients" -j "$((clients < 2 ? 1 : 2))" -T "$DURATION" \
            -f "$work/rt$trips.sql" "$DATABASE_URL" 2>/dev/null)
        after=$(pg_cpu)
        tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
        tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out")
        python3 -c "print(f'{$trips:<14} {$clients:>8} {$tps:>10,.0f} {($after - $before) / $tx * 1e6:>26,.0f}')"
    done
done
