#!/usr/bin/env bash
# Streaming standbys of a cluster made by scripts/pg.sh, on this machine (README, Production).
#   scripts/replica.sh create PRIMARY_PORT DIR PORT [NAME]
#       a standby in DIR from `pg_basebackup -R` of the primary on PRIMARY_PORT, started on PORT,
#       streaming under the name NAME (its cluster_name and application_name; default standby1)
#   scripts/replica.sh sync PRIMARY_PORT NAMES|off
#       the primary's synchronous_standby_names (ALTER SYSTEM, reload): commits wait for NAMES
#       (e.g. standby1, or '*' for any standby); off makes replication asynchronous again
#   scripts/replica.sh wait PRIMARY_PORT NAME [sync|async]
#       waits (30 s at most) until NAME streams from the primary, as sync or async when given
#   scripts/replica.sh promote DIR
#       promotes the standby in DIR to a primary and waits until it accepts writes
#   scripts/replica.sh lag PORT
#       prints the standby's replay lag in seconds (0 when it has replayed all it received)
# Stop a standby with scripts/pg.sh stop DIR. As root, everything runs as "postgres".
set -euo pipefail

pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -n "$pgbin" ]] || { echo "replica: PostgreSQL server binaries not found (run scripts/deps.sh)" >&2; exit 1; }

as_pg() {
    if [[ $(id -u) -eq 0 ]]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}
psql_at() {
    local port=$1
    shift
    as_pg "$pgbin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -X -q -tA "$@"
}

cmd=${1:?usage: replica.sh create|sync|wait|promote|lag …}
case "$cmd" in
create)
    primary_port=${2:?PRIMARY_PORT}
    dir=$(realpath -m "${3:?DIR}")
    port=${4:?PORT}
    name=${5:-standby1}
    [[ "$name" =~ ^[A-Za-z0-9_]+$ ]] || { echo "replica: NAME is letters, digits and _ only" >&2; exit 2; }
    [[ ! -e "$dir/PG_VERSION" ]] || { echo "replica: $dir already holds a cluster" >&2; exit 1; }
    mkdir -p "$dir"
    [[ $(id -u) -eq 0 ]] && chown postgres:postgres "$dir"
    chmod 700 "$dir"
    # -R writes standby.signal and primary_conninfo; -X stream copies the WAL the backup needs.
    as_pg "$pgbin/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres -D "$dir" \
        -R -X stream -c fast 2> >(grep -v "skipping special file" >&2)
    # The copy carries the primary's settings: its own port, socket folder and name instead.
    sed -i -e '/^port = /d' -e '/^unix_socket_directories = /d' -e '/^cluster_name = /d' \
        "$dir/postgresql.conf"
    cat >>"$dir/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '$dir'
cluster_name = '$name'
hot_standby = on
hot_standby_feedback = on
CONF
    rm -f "$dir/server.log" "$dir/postmaster.pid"
    if ! as_pg "$pgbin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 start >/dev/null; then
        echo "replica: the standby did not start; the end of $dir/server.log:" >&2
        tail -n 5 "$dir/server.log" >&2
        exit 1
    fi
    ;;
sync)
    primary_port=${2:?PRIMARY_PORT}
    names=${3:?NAMES or off}
    if [[ "$names" == off ]]; then
        psql_at "$primary_port" -c "ALTER SYSTEM RESET synchronous_standby_names"
    else
        [[ "$names" =~ ^[A-Za-z0-9_,*\ ]+$ ]] || { echo "replica: bad NAMES '$names'" >&2; exit 2; }
        psql_at "$primary_port" -c "ALTER SYSTEM SET synchronous_standby_names = '$names'"
    fi
    psql_at "$primary_port" -c "SELECT pg_reload_conf()" >/dev/null
    ;;
wait)
    primary_port=${2:?PRIMARY_PORT}
    name=${3:?NAME}
    want=${4:-}
    [[ "$name" =~ ^[A-Za-z0-9_]+$ ]] || { echo "replica: NAME is letters, digits and _ only" >&2; exit 2; }
    for _ in $(seq 300); do
        state=$(psql_at "$primary_port" -c \
            "SELECT state || ' ' || sync_state FROM pg_stat_replication WHERE application_name = '$name'")
        case "$state" in
        "streaming sync" | "streaming quorum") [[ "$want" != async ]] && exit 0 ;;
        "streaming async" | "streaming potential") [[ "$want" != sync ]] && exit 0 ;;
        esac
        sleep 0.1
    done
    echo "replica: $name is not streaming${want:+ ($want)} from port $primary_port: '${state:-absent}'" >&2
    exit 1
    ;;
promote)
    dir=$(realpath -m "${2:?DIR}")
    as_pg "$pgbin/pg_ctl" -D "$dir" -w -t 60 promote >/dev/null
    ;;
lag)
    port=${2:?PORT}
    psql_at "$port" -c "SELECT CASE WHEN NOT pg_is_in_recovery()
                                      OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
                                    ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp())
                               END"
    ;;
*)
    echo "replica: unknown command $cmd" >&2
    exit 2
    ;;
esac
