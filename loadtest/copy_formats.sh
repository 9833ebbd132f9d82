#!/usr/bin/env bash
# PostgreSQL's CPU per raw row for COPY in text and in binary format (why the writer copies its
# raw rows in binary, issue 17): a fresh PostgreSQL, COPY_ROWS (200,000) generated events copied
# into the raw table, copied out in both formats, then in again, twice each, alternating; the CPU
# of the postmaster and all its processes per row. Figures, not a test: exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
COPY_ROWS=${COPY_ROWS:-200000}

bench_name=copyformats
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
events_csv "$work/events.csv" "$COPY_ROWS"
copy_events "$work/events.csv"
psql "$DATABASE_URL" -qc "\\copy (SELECT $csv_columns FROM events) TO '$work/events.text'"
psql "$DATABASE_URL" -qc "\\copy (SELECT $csv_columns FROM events) TO '$work/events.binary' WITH (FORMAT binary)"
for format in text binary text binary; do
    cpu=$(insert_cpu_per_row "$COPY_ROWS" \
        -c "\\copy events ($csv_columns) FROM '$work/events.$format' WITH (FORMAT $format)")
    echo "copy_formats: $format: $cpu µs of PostgreSQL CPU per row"
done
