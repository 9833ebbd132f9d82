#!/usr/bin/env bash
# `make run`: a private PostgreSQL under .data/ unless DATABASE_URL is set, migrations, a
# development app and tokens (made once, kept in .data/dev-credentials), then the server.
#
# .data/dev-credentials is a shell file: `source .data/dev-credentials` in another terminal sets
# DATABASE_URL (for `pushtrack report …`), PUSHTRACK_APP_ID, WRITE_KEY, READ_TOKEN and
# ADMIN_TOKEN. Its DATABASE_URL line is rewritten on every run; the app and tokens are made
# again only when the database no longer has that app.
#
# The steps are functions (start_database, build_server, migrate_database, ensure_credentials,
# print_credentials, serve) so that other scripts can source this file and reuse them; run
# directly, it calls main.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PORT=${PORT:-8080}
PG_PORT=${PG_PORT:-54329}
DATA_DIR=${DATA_DIR:-.data}
CREDENTIALS=${CREDENTIALS:-$DATA_DIR/dev-credentials}

# DATABASE_URL as given, else a private cluster in $DATA_DIR/pg on $PG_PORT (exported).
start_database() {
    mkdir -p "$DATA_DIR"
    if [[ -z "${DATABASE_URL:-}" ]]; then
        scripts/pg.sh start "$DATA_DIR/pg" "$PG_PORT"
        DATABASE_URL=$(scripts/pg.sh url "$PG_PORT")
        echo "run: private PostgreSQL in $DATA_DIR/pg on port $PG_PORT"
    fi
    export DATABASE_URL
}

# A release build; PUSHTRACK is the binary.
build_server() {
    swift build -c release
    PUSHTRACK="$(swift build -c release --show-bin-path)/pushtrack"
}

migrate_database() {
    "$PUSHTRACK" migrate
}

# `value` single-quoted for a shell (a ' inside becomes '\'').
shell_quote() {
    printf "'%s'" "${1//\'/\'\\\'\'}"
}

# One value of the credentials file: the shell variable $1, from a file in the current format
# (export NAME='…') or in the earlier one ("label:  value" lines, before the file could be
# sourced).
stored_value() {
    local name=$1 label=$2
    [[ -s "$CREDENTIALS" ]] || return 0
    if grep -q "^export $name=" "$CREDENTIALS"; then
        (set +u; source "$CREDENTIALS" >/dev/null 2>&1; printf '%s' "${!name:-}")
    else
        sed -n "s/^$label:[[:space:]]*//p" "$CREDENTIALS" | head -n 1
    fi
}

# The development app and its tokens, kept in $CREDENTIALS with the DATABASE_URL they work
# with; made when the file is missing or its app is not in this database.
ensure_credentials() {
    local app_id write_key read_token admin_token
    app_id=$(stored_value PUSHTRACK_APP_ID "app id")
    write_key=$(stored_value WRITE_KEY "write key")
    read_token=$(stored_value READ_TOKEN "read token")
    admin_token=$(stored_value ADMIN_TOKEN "admin token")
    # `report audience --app` exits 1 when the database has no such app.
    if [[ -z "$app_id" || -z "$write_key" || -z "$read_token" || -z "$admin_token" ]] ||
        ! "$PUSHTRACK" report audience --app "$app_id" --format json >/dev/null 2>&1; then
        local app_json
        app_json=$("$PUSHTRACK" app create development --format json)
        app_id=$(json_field appId <<<"$app_json")
        write_key=$(json_field writeKey <<<"$app_json")
        read_token=$("$PUSHTRACK" token create --role read --app "$app_id" --format json |
            json_field token)
        admin_token=$("$PUSHTRACK" token create --role admin --app "$app_id" --format json |
            json_field token)
    fi
    {
        echo "# PushTrack development credentials, written by make run (scripts/run.sh)."
        echo "# Load them in another terminal: source $CREDENTIALS"
        echo "export DATABASE_URL=$(shell_quote "$DATABASE_URL")"
        echo "export PUSHTRACK_APP_ID=$(shell_quote "$app_id")"
        echo "export WRITE_KEY=$(shell_quote "$write_key")"
        echo "export READ_TOKEN=$(shell_quote "$read_token")"
        echo "export ADMIN_TOKEN=$(shell_quote "$admin_token")"
    } >"$CREDENTIALS.tmp"
    chmod 600 "$CREDENTIALS.tmp"
    mv "$CREDENTIALS.tmp" "$CREDENTIALS"
}

json_field() {
    python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}

print_credentials() {
    echo "run: development credentials (source $CREDENTIALS to set them in another shell):"
    grep '^export ' "$CREDENTIALS" | sed 's/^/  /'
    echo "run: for pushtrack report in another terminal:"
    echo "  $(grep '^export DATABASE_URL=' "$CREDENTIALS")"
}

serve() {
    echo "run: serving on http://localhost:$PORT (Ctrl-C stops)"
    exec "$PUSHTRACK" serve --port "$PORT"
}

main() {
    start_database
    build_server
    migrate_database
    ensure_credentials
    print_credentials
    # scripts/run-cluster.sh: the database, build, migrations and credentials, without serving.
    [[ -z "${RUN_SETUP_ONLY:-}" ]] || return 0
    serve
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    main "$@"
fi
