#!/usr/bin/env bash
# A private PgBouncer (Debian's, from scripts/deps.sh) in front of a local PostgreSQL.
#   scripts/pgbouncer.sh start DIR PORT PG_PORT [POOL_SIZE] [MODE]
#       PgBouncer on 127.0.0.1:PORT for every database of the server on PG_PORT, user postgres
#       (trust), POOL_SIZE (5) server connections per database, pool_mode MODE (transaction)
#   scripts/pgbouncer.sh stop DIR
#   scripts/pgbouncer.sh url PORT   the DATABASE_URL through it (database pushtrack)
# PgBouncer refuses to run as root: as root it runs as "postgres", its files owned by it.
set -euo pipefail

as_pg() {
    if [[ $(id -u) -eq 0 ]]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

cmd=${1:?usage: pgbouncer.sh start DIR PORT PG_PORT [POOL_SIZE] [MODE] | stop DIR | url PORT}
case "$cmd" in
start)
    dir=$(realpath -m "${2:?DIR}")
    port=${3:?PORT}
    pg_port=${4:?PG_PORT}
    pool=${5:-5}
    mode=${6:-transaction}
    command -v pgbouncer >/dev/null || { echo "pgbouncer: not installed (run scripts/deps.sh)" >&2; exit 1; }
    mkdir -p "$dir"
    echo '"postgres" ""' >"$dir/userlist.txt"
    cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$pg_port

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir = $dir
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = $mode
default_pool_size = $pool
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 2000
max_db_connections = $pool
server_lifetime = 3600
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
admin_users = postgres
ignore_startup_parameters = extra_float_digits
INI
    [[ $(id -u) -eq 0 ]] && chown -R postgres:postgres "$dir"
    as_pg pgbouncer -d "$dir/pgbouncer.ini"
    for _ in $(seq 100); do
        python3 -c "import socket,sys; s=socket.socket(); sys.exit(0 if s.connect_ex(('127.0.0.1', $port)) == 0 else 1)" && exit 0
        sleep 0.05
    done
    echo "pgbouncer: not listening on $port; its log:" >&2
    tail -n 5 "$dir/pgbouncer.log" >&2
    exit 1
    ;;
stop)
    dir=$(realpath -m "${2:?DIR}")
    if [[ -f "$dir/pgbouncer.pid" ]]; then
        pid=$(cat "$dir/pgbouncer.pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.05; done
        kill -9 "$pid" 2>/dev/null || true
    fi
    ;;
url)
    echo "postgresql://postgres@127.0.0.1:${2:?PORT}/pushtrack"
    ;;
*)
    echo "pgbouncer: unknown command $cmd" >&2
    exit 2
    ;;
esac
