#!/usr/bin/env bash
# A measurement for a lead, not part of any benchmark (loadtest/README.md, "One delta row per
# group commit, packed"): what PostgreSQL spends appending a single-event group commit's rollup
# deltas (16, the figure `loadtest/statement_cpu.sh` shows for BATCH=1) as 16 rows, the way the
# writer does now, against as one row holding the same 16 entries in arrays.
# It makes two scratch tables in the database of DATABASE_URL, one shaped like `report_deltas`
# (`pushtrack migrate` must have made it: LIKE … INCLUDING ALL copies its index) and one packed,
# runs ROUNDS (3) rounds of `pgbench` (one client, PGBENCH_SECONDS (5) each, prepared statements,
# synchronous_commit off so that the WAL flush does not hide the CPU) of each, alternating, and
# prints transactions per second and each table's size per entry.
# Usage: DATABASE_URL=postgresql://… loadtest/trials/packed_deltas.sh. Exits 0.
set -euo pipefail
url=${DATABASE_URL:?set DATABASE_URL to a scratch database that pushtrack migrate has made}
ROUNDS=${ROUNDS:-3}
SECONDS_EACH=${PGBENCH_SECONDS:-5}
work=${WORK:-$(mktemp -d)}
export PGOPTIONS="-c client_min_messages=warning"
q() { psql "$url" -X -qtA "$@"; }
trap 'q -c "DROP TABLE IF EXISTS trial_row_deltas, trial_packed_deltas"; rm -rf "$work"' EXIT

q -c "DROP TABLE IF EXISTS trial_row_deltas, trial_packed_deltas" \
    -c "CREATE TABLE trial_row_deltas (LIKE report_deltas INCLUDING ALL)" \
    -c "CREATE TABLE trial_packed_deltas (
            delta_id bigint GENERATED ALWAYS AS IDENTITY, app_id text COLLATE \"C\" NOT NULL,
            message_id text[] COLLATE \"C\" NOT NULL, bucket timestamptz[] NOT NULL,
            platform text[] NOT NULL, app_version text[] NOT NULL, locale text[] NOT NULL,
            delivered bigint[] NOT NULL, confirmed bigint[] NOT NULL, foreground bigint[] NOT NULL,
            background bigint[] NOT NULL, opened bigint[] NOT NULL, clicks bigint[] NOT NULL,
            dismissed bigint[] NOT NULL, duplicate_reports bigint[] NOT NULL,
            extension_confirmed bigint[] NOT NULL, arrival_second bigint[] NOT NULL,
            arrival_pairs bigint[] NOT NULL, open_bin int[] NOT NULL, open_pairs bigint[] NOT NULL)"

# A 16-element array literal of the values $1 prints for 1…16.
array() { echo "'{$(for i in $(seq 16); do $1 "$i"; done | paste -sd,)}'"; }
message() { printf 'msg-%08d\n' $(($1 * 7919 % 97)); }
one() { echo 1; }
zero() { echo 0; }
bucket() { echo '"2026-12-07 16:00:00+00"'; }
platform() { echo ios; }
version() { echo "$(($1 % 5)).0"; }
locale() { echo en-US; }
second() { echo 1765000000; }
m=$(array message) b=$(array bucket) p=$(array platform) v=$(array version) l=$(array locale)
o=$(array one) z=$(array zero) s=$(array second)
columns="app_id, message_id, bucket, platform, app_version, locale, delivered, confirmed,
         foreground, background, opened, clicks, dismissed, duplicate_reports,
         extension_confirmed, arrival_second, arrival_pairs, open_bin, open_pairs"
cat >"$work/rows.sql" <<SQL
SET synchronous_commit = off;
INSERT INTO trial_row_deltas ($columns) SELECT 'app', m, b, p, v, l, d, c, f, bg, op, ck, ds, dr, ec, s, ap, ob, obp FROM (SELECT unnest($m::text[]) m, unnest($b::timestamptz[]) b, unnest($p::text[]) p, unnest($v::text[]) v, unnest($l::text[]) l, unnest($o::bigint[]) d, unnest($o::bigint[]) c, unnest($z::bigint[]) f, unnest($o::bigint[]) bg, unnest($z::bigint[]) op, unnest($z::bigint[]) ck, unnest($z::bigint[]) ds, unnest($z::bigint[]) dr, unnest($z::bigint[]) ec, unnest($s::bigint[]) s, unnest($o::bigint[]) ap, unnest($z::int[]) ob, unnest($z::bigint[]) obp) t;
SQL
cat >"$work/packed.sql" <<SQL
SET synchronous_commit = off;
INSERT INTO trial_packed_deltas ($columns) VALUES ('app', $m, $b, $p, $v, $l, $o, $o, $z, $o, $z, $z, $z, $z, $z, $s, $o, $z, $z);
SQL
# pgbench reads one statement per line.
for f in rows packed; do
    awk 'BEGIN {RS = ";\n"} NF {gsub(/\n */, " "); print $0 ";"}' "$work/$f.sql" >"$work/$f.one"
done
for round in $(seq "$ROUNDS"); do
    for f in rows packed; do
        tps=$(pgbench -n -M prepared -c1 -T"$SECONDS_EACH" -f "$work/$f.one" "$url" 2>/dev/null |
            awk '/^tps/ {print $3}')
        printf 'round %d, %-6s 16 entries a transaction: %8.0f transactions/s, %6.1f µs a transaction\n' \
            "$round" "$f" "$tps" "$(python3 -c "print(1e6 / $tps)")"
    done
done
q -c "SELECT 'rows:   ' || pg_size_pretty(pg_total_relation_size('trial_row_deltas') / greatest(count(*), 1)) || ' an entry' FROM trial_row_deltas" \
    -c "SELECT 'packed: ' || pg_size_pretty(pg_total_relation_size('trial_packed_deltas') / greatest(16 * count(*), 1)) || ' an entry' FROM trial_packed_deltas"
