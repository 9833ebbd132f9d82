#!/usr/bin/env bash
# A measurement for a lead, not part of any benchmark (loadtest/README.md, "A single event's
# cost: what each group commit pays, and what each event pays"): what PostgreSQL spends on a
# single-event group commit's rollup deltas (16 rows, the figure `loadtest/statement_cpu.sh`
# shows for BATCH=1) when the rows come as one array per column, stepped through by one `unnest`
# each in the select list (the writer's way now), against one array of a composite type,
# stepped through by one `unnest`. Every `unnest` in a select list is a function the executor
# sets up at each execution (`ExecInitFunctionResultSet`).
# It makes a scratch table shaped like `report_deltas` (`pushtrack migrate` must have made the
# database of DATABASE_URL: LIKE … INCLUDING ALL copies its index) and a scratch composite
# type, then runs each form EXECUTIONS (2000) times in one backend, alternating, ROUNDS (6)
# times, and prints µs per execution and the mean ratio. The arrays are constants of the cached
# plans, so their text is parsed once: this times the execution, not the parameters' input (the
# writer binds them in binary).
# Usage: DATABASE_URL=postgresql://… loadtest/trials/composite_rows.sh. Exits 0.
set -euo pipefail
url=${DATABASE_URL:?set DATABASE_URL to a scratch database that pushtrack migrate has made}
ROUNDS=${ROUNDS:-6}
EXECUTIONS=${EXECUTIONS:-2000}
export PGOPTIONS="-c client_min_messages=warning"
q() { psql "$url" -X -qtA "$@"; }
trap 'q -c "DROP TABLE IF EXISTS trial_composite_rows" -c "DROP TYPE IF EXISTS trial_delta"' EXIT

columns=(app_id message_id bucket platform app_version locale delivered confirmed foreground
    background opened clicks dismissed duplicate_reports extension_confirmed arrival_second
    arrival_pairs open_bin open_pairs)
types=(text text timestamptz text text text bigint bigint bigint bigint bigint bigint bigint
    bigint bigint bigint bigint int bigint)
fields=()
for i in "${!columns[@]}"; do fields+=("${columns[$i]} ${types[$i]}"); done
q -c "DROP TABLE IF EXISTS trial_composite_rows" -c "DROP TYPE IF EXISTS trial_delta" \
    -c "CREATE TABLE trial_composite_rows (LIKE report_deltas INCLUDING ALL)" \
    -c "CREATE TYPE trial_delta AS ($(IFS=,; echo "${fields[*]}"))"

# Column $1's value in row $2 (1…16), shaped like a single-event commit's deltas.
value() {
    case $1 in
    app_id) echo app ;;
    message_id) printf 'msg-%08d' $(($2 * 7919 % 97)) ;;
    bucket) echo '2026-12-07 16:00:00+00' ;;
    platform) echo ios ;;
    app_version) echo "$(($2 % 5)).0" ;;
    locale) echo en-US ;;
    arrival_second) echo 1765000000 ;;
    delivered | confirmed | background | arrival_pairs) echo 1 ;;
    *) echo 0 ;;
    esac
}
list=$(IFS=,; echo "${columns[*]}")
arrays=()
for i in "${!columns[@]}"; do
    elements=()
    for row in $(seq 16); do elements+=("\"$(value "${columns[$i]}" "$row")\""); done
    arrays+=("unnest('{$(IFS=,; echo "${elements[*]}")}'::${types[$i]}[]) AS ${columns[$i]}")
done
records=()
for row in $(seq 16); do
    values=()
    for column in "${columns[@]}"; do values+=("$(value "$column" "$row")"); done
    records+=("\"($(IFS=,; echo "${values[*]}"))\"")
done
columns_sql="INSERT INTO trial_composite_rows ($list) SELECT * FROM (SELECT $(IFS=,; echo "${arrays[*]}")) t"
composite_sql="INSERT INTO trial_composite_rows ($list) SELECT (r).* FROM unnest('{$(IFS=,; echo "${records[*]}")}'::trial_delta[]) r"
# Both forms store the same 16 rows.
q -c "$columns_sql" -c "$composite_sql"
[[ $(q -c "SELECT count(*) FROM (SELECT $list FROM trial_composite_rows
                                  GROUP BY $list HAVING count(*) <> 2) d") == 0 ]] ||
    { echo "the two forms stored different rows" >&2; exit 1; }

# Each form EXECUTIONS times in a row inside one backend (a PL/pgSQL loop: each statement's
# plan is cached, and the executor sets it up again at every execution, as for the writer's
# prepared statements), alternating, ROUNDS times; the table is emptied between blocks.
q -c "SET synchronous_commit = off" -c "DO \$\$
DECLARE
    started timestamptz;
    columns_us float8;
    composite_us float8;
    ratios float8 := 0;
BEGIN
    FOR round IN 1..$ROUNDS LOOP
        TRUNCATE trial_composite_rows;
        started := clock_timestamp();
        FOR i IN 1..$EXECUTIONS LOOP
            $columns_sql;
        END LOOP;
        columns_us := extract(epoch FROM clock_timestamp() - started) * 1e6 / $EXECUTIONS;
        TRUNCATE trial_composite_rows;
        started := clock_timestamp();
        FOR i IN 1..$EXECUTIONS LOOP
            $composite_sql;
        END LOOP;
        composite_us := extract(epoch FROM clock_timestamp() - started) * 1e6 / $EXECUTIONS;
        ratios := ratios + composite_us / columns_us;
        RAISE WARNING 'round %: columns % µs, composite % µs an execution of 16 rows', round,
            round(columns_us::numeric, 1), round(composite_us::numeric, 1);
    END LOOP;
    RAISE WARNING 'mean composite / columns: %', round((ratios / $ROUNDS)::numeric, 2);
END
\$\$" 2>&1 | sed 's/^.*WARNING:  //'
