#!/usr/bin/env bash
# PostgreSQL's CPU per raw row for the two ways to turn the writer's array parameters into rows
# (issue 17): `FROM unnest(a, b, …) AS t(…)`, which PostgreSQL runs as one function per array,
# each copied into a store of its own first, against `FROM (SELECT unnest(a), unnest(b), …)`,
# where the arrays are stepped through together, a row at a time, with nothing stored. A fresh
# PostgreSQL, ROWS (100,000) generated events copied into the raw table and gathered into one
# array per column (24, as the writer binds them); then the raw table is emptied and the rows
# inserted from the arrays in each form, three times each, alternating. Figures, not a test:
# exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-100000}

bench_name=unnestforms
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
events_csv "$work/events.csv" "$ROWS"
copy_events "$work/events.csv"
# shellcheck disable=SC2206  # the column names are words
columns=(${csv_columns//,/})
list=$(IFS=,; echo "${columns[*]}")
# The SQL pieces, a part per column: properties is bound as text, as the writer binds it, and
# cast back to jsonb in the SELECT.
aggregates="" selected="" arrays="" steps=""
for c in "${columns[@]}"; do
    bound=$c value="t.$c"
    [[ $c != properties ]] || bound="$c::text" value="t.$c::jsonb"
    aggregates+="${aggregates:+, }array_agg($bound) AS $c"
    selected+="${selected:+, }$value"
    arrays+="${arrays:+, }a.$c"
    steps+="${steps:+, }unnest(a.$c) AS $c"
done
psql "$DATABASE_URL" -qc "CREATE TABLE unnest_arrays AS SELECT $aggregates FROM events"
for form in functions select functions select functions select; do
    if [[ $form == functions ]]; then
        from="unnest_arrays a, unnest($arrays) AS t($list)"
        name="FROM unnest(a, b, …)"
    else
        from="unnest_arrays a, LATERAL (SELECT $steps) AS t"
        name="FROM (SELECT unnest(a), unnest(b), …)"
    fi
    cpu=$(insert_cpu_per_row "$ROWS" -c "INSERT INTO events ($list) SELECT $selected FROM $from")
    printf 'unnest_forms: %-38s %5s µs of PostgreSQL CPU per row\n' "$name" "$cpu"
done
