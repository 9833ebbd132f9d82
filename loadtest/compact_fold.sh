#!/usr/bin/env bash
# What one fold of the report compactor costs (issue 17; sql/015), away from any other load:
# builds in release mode, starts a fresh PostgreSQL, registers 97 messages, then FOLDS (30) times
# appends a second of single-event load's deltas (5,000 report deltas of those messages, 4,500
# of them with an arrival second, as loadtest/statement_cpu.sh's load leaves; sql/022) and runs
# the two compaction functions, timed by psql (the delivery fold only rebuilds histograms now). Prints the mean time of each, a second's and a call's. VACUUM=1 vacuums the delta tables
# after each fold, as an autovacuum visiting every second would. PARTS=4 folds each second's
# deltas as `pushtrack serve` does by default (sql/021): one call per part of the messages, the
# times of a second's calls added up. Figures, not a test: exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
FOLDS=${FOLDS:-30}
VACUUM=${VACUUM:-}
PARTS=${PARTS:-1}

bench_name=compact-fold
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
psql "$DATABASE_URL" -qc "INSERT INTO apps (app_id, name) VALUES ('fold', 'fold')" -c \
    "INSERT INTO messages (app_id, message_id, campaign_id) SELECT 'fold', 'm' || i, 'c' || i % 7 FROM generate_series(0, 96) i"
{
    echo '\timing on'
    for _ in $(seq "$FOLDS"); do
        cat <<'SQL'
INSERT INTO report_deltas (app_id, message_id, bucket, platform, app_version, locale, delivered,
    confirmed, foreground, background, opened, clicks, dismissed, duplicate_reports,
    extension_confirmed, arrival_second, arrival_pairs)
SELECT 'fold', 'm' || i % 97, date_trunc('hour', now()) + (i % 2) * interval '5 minutes', 'ios',
       '3.2.1', 'en-US', 1, 1, 0, 1, i % 5 / 4, i % 5 / 4, 0, 0, 1, 1000 + i % 3,
       (i <= 4500)::int
FROM generate_series(1, 5000) i;
SQL
        for part in $(seq 0 $((PARTS - 1))); do
            echo "SELECT 'report fold', pushtrack_compact_report_deltas($part, $PARTS);"
            echo "SELECT 'delivery fold', pushtrack_compact_delivery_deltas($part, $PARTS);"
        done
        [[ -n "$VACUUM" ]] && echo "VACUUM (TRUNCATE false) report_deltas;"
    done
} | psql "$DATABASE_URL" -At | awk -v folds="$FOLDS" -v parts="$PARTS" '
    /^report fold\|/ { next_is = "report" ; next }
    /^delivery fold\|/ { next_is = "delivery" ; next }
    /^Time: / { if (next_is != "") { sum[next_is] += $2; next_is = "" } }
    END {
        printf "compact_fold: %d folds of 5,000 report deltas, 4,500 with an arrival (97 messages), in %d part(s)\n", folds, parts
        printf "report fold    %7.1f ms a second, %7.1f ms a call\n", sum["report"] / folds, sum["report"] / folds / parts
        printf "delivery fold  %7.1f ms a second, %7.1f ms a call\n", sum["delivery"] / folds, sum["delivery"] / folds / parts
    }'
