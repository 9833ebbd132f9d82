#!/usr/bin/env bash
# A check for a lead, not part of any benchmark (loadtest/README.md, "Folding by TRUNCATE: not
# MVCC-safe"): whether a fold that empties its delta rows with TRUNCATE, instead of deleting
# them, keeps every reader's total exact. It makes two scratch tables in the database of
# DATABASE_URL (an aggregate of 0 and 100 delta rows of 1, the total always 100), folds them
# (the aggregate adds the deltas' sum, then TRUNCATE) while a reader reads, and prints the total
# each reader saw:
#   - a READ COMMITTED reader whose one statement waits for the fold's lock: it sees 100;
#   - a REPEATABLE READ reader whose snapshot was taken (by another table) before the fold
#     committed, as the report and verify transactions' first statements do: it sees the
#     aggregate without the fold and the deltas already gone, 0.
# Usage: DATABASE_URL=postgresql://… loadtest/trials/truncate_snapshot.sh. Exits 0.
set -euo pipefail
url=${DATABASE_URL:?set DATABASE_URL to a scratch database}
export PGOPTIONS="-c client_min_messages=warning"
q() { psql "$url" -X -qtA "$@"; }
reset() {
    q -c "DROP TABLE IF EXISTS trial_agg, trial_deltas" \
        -c "CREATE TABLE trial_agg (n bigint); INSERT INTO trial_agg VALUES (0)" \
        -c "CREATE TABLE trial_deltas (n bigint)" \
        -c "INSERT INTO trial_deltas SELECT 1 FROM generate_series(1, 100)"
}
fold="BEGIN; UPDATE trial_agg SET n = n + (SELECT sum(n) FROM trial_deltas);
      TRUNCATE trial_deltas; SELECT pg_sleep(${HOLD:-1}); COMMIT;"
total="SELECT (SELECT sum(n) FROM trial_agg) + (SELECT coalesce(sum(n), 0) FROM trial_deltas)"
trap 'q -c "DROP TABLE IF EXISTS trial_agg, trial_deltas"' EXIT

reset
q -c "$fold" >/dev/null &
sleep 0.3
echo "READ COMMITTED, one statement during the fold: total $(q -c "$total") (100 is exact)"
wait

reset
(sleep 0.5 && q -c "$fold" >/dev/null) &
seen=$(q <<SQL | tail -1
BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;
SELECT count(*) FROM pg_class WHERE false;
SELECT pg_sleep(${HOLD:-1} + 1);
$total;
COMMIT;
SQL
)
wait
echo "REPEATABLE READ, snapshot before the fold, read after it: total $seen (100 is exact)"
