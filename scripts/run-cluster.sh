#!/usr/bin/env bash
# `make run-cluster`: the production shape on one machine (DESIGN.md section 5): PostgreSQL as
# for `make run` (or DATABASE_URL), COLLECTORS collectors, and HAProxy with deploy/haproxy.cfg in
# front, terminating TLS on TLS_PORT. Prints the URLs and credentials; Ctrl-C or SIGTERM stops
# everything it started.
#
# Environment:
#   COLLECTORS (2)    collectors (`pushtrack serve`), on free loopback ports
#   TLS_PORT (8443)   HTTPS port; TLS_BIND ("": every interface) the address to listen on
#   TLS_CERT          a PEM with the certificate (and chain) and its key; without it a
#                     development CA and a certificate for localhost and 127.0.0.1 are made once
#                     in TLS_DIR (.data/tls): clients trust TLS_DIR/ca.pem
#   DATABASE_URL      a database to use instead of the private PostgreSQL of `make run`
#                     (DATA_DIR/pg, DATA_DIR .data, on PG_PORT, 54329)
#   PUSHTRACK_BIN     a built pushtrack to run (no build, no development credentials; the tests
#                     use it), with RUN_DIR (.data/cluster) for the logs and configuration
#   HAPROXY_MAXCONN   HAProxy's connections at once (20000, or what `ulimit -Hn` allows)
#   SERVE_ARGS        more flags for every collector
# `scripts/run-cluster.sh tls DIR` only makes the development CA and certificate in DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

# Makes (once) a development CA ($1/ca.pem) and a server certificate for localhost and
# 127.0.0.1 signed by it, with the key, in $1/server.pem (what HAProxy's `crt` reads). The
# certificate is what iOS accepts from a CA the user trusts: ECDSA P-256, SHA-256, a SAN, server
# auth, at most 825 days.
make_tls() {
    local dir=$1
    # Readable by every user, so that any client can trust ca.pem; the keys are the owner's.
    mkdir -p "$dir"
    chmod 755 "$dir"
    [[ -s "$dir/server.pem" && -s "$dir/ca.pem" ]] && return
    # The keys are never readable by others, not even while they are written.
    local mask
    mask=$(umask)
    umask 077
    openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 \
        -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 3650 -subj "/CN=PushTrack development CA" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 \
        -keyout "$dir/server.key" -out "$dir/server.csr" -subj "/CN=localhost" 2>/dev/null
    printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=CA:FALSE" \
        "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >"$dir/server.ext"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
        -CAcreateserial -days 825 -sha256 -extfile "$dir/server.ext" -out "$dir/server.crt" 2>/dev/null
    cat "$dir/server.crt" "$dir/server.key" >"$dir/server.pem.tmp"
    chmod 600 "$dir/server.pem.tmp" "$dir/ca.key" "$dir/server.key"
    mv "$dir/server.pem.tmp" "$dir/server.pem"
    umask "$mask"
    chmod 644 "$dir/ca.pem" "$dir/server.crt"
    rm -f "$dir/server.csr" "$dir/server.ext"
    echo "run-cluster: made a development CA ($dir/ca.pem) and a certificate for localhost, 127.0.0.1"
}

if [[ "${1:-}" == "tls" ]]; then
    make_tls "${2:?usage: run-cluster.sh tls DIR}"
    exit 0
fi

COLLECTORS=${COLLECTORS:-2}
TLS_PORT=${TLS_PORT:-8443}
TLS_DIR=${TLS_DIR:-.data/tls}
RUN_DIR=${RUN_DIR:-.data/cluster}
[[ "$COLLECTORS" =~ ^[1-9][0-9]*$ ]] || { echo "run-cluster: COLLECTORS must be a positive number, got '$COLLECTORS'" >&2; exit 2; }
[[ "$TLS_PORT" =~ ^[0-9]+$ ]] && ((TLS_PORT > 0 && TLS_PORT < 65536)) ||
    { echo "run-cluster: TLS_PORT must be a port number, got '$TLS_PORT'" >&2; exit 2; }
command -v haproxy >/dev/null || { echo "run-cluster: haproxy is not installed (run scripts/deps.sh)" >&2; exit 1; }

pids=()
stopped_pg=""
stop_all() {
    trap - EXIT INT TERM
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    [[ -n "$stopped_pg" ]] && scripts/pg.sh stop "$stopped_pg" >/dev/null 2>&1 || true
    echo "run-cluster: stopped"
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The database as for `make run`: DATABASE_URL, else the private cluster in DATA_DIR/pg
# (.data/pg) on PG_PORT (54329), started here when it is not running, and then stopped on exit.
if [[ -z "${DATABASE_URL:-}" ]]; then
    data_dir=${DATA_DIR:-.data}
    pg_port=${PG_PORT:-54329}
    if ! python3 -c "import socket,sys; s=socket.socket(); sys.exit(0 if s.connect_ex(('127.0.0.1', $pg_port)) == 0 else 1)"; then
        stopped_pg=$data_dir/pg
    fi
    mkdir -p "$data_dir"
    scripts/pg.sh start "$data_dir/pg" "$pg_port"
    DATABASE_URL=$(scripts/pg.sh url "$pg_port")
    echo "run-cluster: private PostgreSQL in $data_dir/pg on port $pg_port"
fi
export DATABASE_URL
if [[ -n "${PUSHTRACK_BIN:-}" ]]; then
    bin=$PUSHTRACK_BIN
    "$bin" migrate >/dev/null
else
    # The build, the migrations and the development credentials of `make run`.
    RUN_SETUP_ONLY=1 scripts/run.sh
    bin="$(swift build -c release --show-bin-path)/pushtrack"
fi

if [[ -n "${TLS_CERT:-}" ]]; then
    [[ -r "$TLS_CERT" ]] || { echo "run-cluster: TLS_CERT $TLS_CERT is not readable" >&2; exit 2; }
    ca_note="the certificate in $TLS_CERT"
    # A real certificate names the real host, not localhost: the check skips verification.
    check_tls=(-k)
else
    make_tls "$TLS_DIR"
    TLS_CERT="$TLS_DIR/server.pem"
    ca_note="clients trust $TLS_DIR/ca.pem (e.g. curl --cacert $TLS_DIR/ca.pem)"
    check_tls=(--cacert "$TLS_DIR/ca.pem")
fi

mkdir -p "$RUN_DIR"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cp deploy/haproxy.cfg "$RUN_DIR/haproxy.cfg"
for i in $(seq "$COLLECTORS"); do
    port=$(free_port)
    # shellcheck disable=SC2086  # SERVE_ARGS is a list of flags
    "$bin" serve --port "$port" --bind 127.0.0.1 --trusted-proxy 127.0.0.1 --secure-cookies true \
        ${SERVE_ARGS:-} 2>>"$RUN_DIR/collector$i.log" &
    pids+=($!)
    echo "    server collector$i 127.0.0.1:$port" >>"$RUN_DIR/haproxy.cfg"
    ready=""
    for _ in $(seq 300); do
        curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && { ready=1; break; }
        sleep 0.1
    done
    [[ -n "$ready" ]] || { echo "run-cluster: collector $i did not become ready; its log:" >&2; tail -5 "$RUN_DIR/collector$i.log" >&2; exit 1; }
    echo "run-cluster: collector $i on 127.0.0.1:$port (log $RUN_DIR/collector$i.log)"
done

# Two descriptors per connection: as many as this shell's hard limit allows, at most 20,000.
maxconn=${HAPROXY_MAXCONN:-$(( $(ulimit -Hn) / 2 - 50 < 20000 ? $(ulimit -Hn) / 2 - 50 : 20000 ))}
TLS_BIND=${TLS_BIND:-} TLS_PORT=$TLS_PORT TLS_CERT=$TLS_CERT HAPROXY_MAXCONN=$maxconn \
    haproxy -db -f "$RUN_DIR/haproxy.cfg" >>"$RUN_DIR/haproxy.log" 2>&1 &
pids+=($!)
host=${TLS_BIND:-localhost}
[[ "$host" == "0.0.0.0" || "$host" == "127.0.0.1" ]] && host=localhost
ready=""
for _ in $(seq 100); do
    curl -sf "${check_tls[@]}" "https://$host:$TLS_PORT/readyz" >/dev/null && { ready=1; break; }
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.1
done
[[ -n "$ready" ]] || { echo "run-cluster: HAProxy did not start; its log:" >&2; tail -5 "$RUN_DIR/haproxy.log" >&2; exit 1; }
echo "run-cluster: HAProxy on https://$host:$TLS_PORT (maxconn $maxconn) in front of $COLLECTORS collectors (log $RUN_DIR/haproxy.log); $ca_note"
echo "run-cluster: ingestion https://$host:$TLS_PORT/customer-track/upload-event, dashboard https://$host:$TLS_PORT/dashboard"
echo "run-cluster: ready (Ctrl-C stops)"
wait -n "${pids[@]}" || true
echo "run-cluster: a process exited; stopping the others" >&2
exit 1
