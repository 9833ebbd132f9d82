#!/usr/bin/env bash
# A private PostgreSQL cluster in a folder of ours.
#   scripts/pg.sh start DIR PORT   initialise DIR if new, start it, create database "pushtrack"
#   scripts/pg.sh stop DIR [mode]  stop it (mode: fast by default, or immediate)
#   scripts/pg.sh url PORT         print the DATABASE_URL for it
#   scripts/pg.sh hugepages DIR    print how many huge pages the stopped cluster's shared memory
#                                  needs (PostgreSQL's shared_memory_size_in_huge_pages)
# As root, the server runs as the "postgres" user, since initdb and postgres refuse root.
set -euo pipefail

pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -n "$pgbin" ]] || { echo "pg: PostgreSQL server binaries not found (run scripts/deps.sh)" >&2; exit 1; }

as_pg() {
    # From /, so the postgres user is not left in a folder it may not enter.
    if [[ $(id -u) -eq 0 ]]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

cmd=${1:?usage: pg.sh start DIR PORT | stop DIR [mode] | url PORT | hugepages DIR}
case "$cmd" in
start)
    dir=$(realpath -m "${2:?DIR}")
    port=${3:?PORT}
    if [[ ! -f "$dir/PG_VERSION" ]]; then
        mkdir -p "$dir"
        if [[ $(id -u) -eq 0 ]] && ! runuser -u postgres -- test -x "$(dirname "$dir")"; then
            echo "pg: the postgres user cannot reach $dir (a parent folder is private); set DATABASE_URL or move the project" >&2
            exit 1
        fi
        [[ $(id -u) -eq 0 ]] && chown postgres:postgres "$dir"
        chmod 700 "$dir"
        as_pg "$pgbin/initdb" -D "$dir" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
        cat >>"$dir/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 200
shared_buffers = 256MB
min_wal_size = 1GB
max_wal_size = 16GB
wal_compression = lz4
logging_collector = off
CONF
    fi
    sed -i "s/^port = .*//" "$dir/postgresql.conf"
    echo "port = $port" >>"$dir/postgresql.conf"
    if ! as_pg "$pgbin/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
        if python3 -c "import socket,sys; s=socket.socket(); sys.exit(0 if s.connect_ex(('127.0.0.1', $port)) == 0 else 1)"; then
            echo "pg: port $port is already in use (another PostgreSQL?); choose another port (make run: PG_PORT=…)" >&2
            exit 1
        fi
        if ! as_pg "$pgbin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 start >/dev/null; then
            echo "pg: PostgreSQL did not start; the end of $dir/server.log:" >&2
            tail -n 5 "$dir/server.log" >&2
            exit 1
        fi
    fi
    as_pg "$pgbin/psql" -h 127.0.0.1 -p "$port" -U postgres -tAc \
        "SELECT 1 FROM pg_database WHERE datname = 'pushtrack'" | grep -q 1 ||
        as_pg "$pgbin/createdb" -h 127.0.0.1 -p "$port" -U postgres pushtrack
    ;;
stop)
    dir=$(realpath -m "${2:?DIR}")
    mode=${3:-fast}
    if [[ -f "$dir/postmaster.pid" ]]; then
        as_pg "$pgbin/pg_ctl" -D "$dir" -m "$mode" -w stop >/dev/null || true
    fi
    ;;
hugepages)
    as_pg "$pgbin/postgres" -D "$(realpath -m "${2:?DIR}")" -C shared_memory_size_in_huge_pages
    ;;
url)
    echo "postgresql://postgres@127.0.0.1:${2:?PORT}/pushtrack"
    ;;
*)
    echo "pg: unknown command $cmd" >&2
    exit 2
    ;;
esac
