#!/usr/bin/env bash
# `make run`: a private PostgreSQL under .data/ unless DATABASE_URL is set, migrations, a
# development app and tokens (made once, kept in .data/dev-credentials), then the server.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${PORT:-8080}
PG_PORT=${PG_PORT:-54329}
mkdir -p .data
if [[ -z "${DATABASE_URL:-}" ]]; then
    scripts/pg.sh start .data/pg "$PG_PORT"
    DATABASE_URL=$(scripts/pg.sh url "$PG_PORT")
    echo "run: private PostgreSQL in .data/pg on port $PG_PORT"
fi
export DATABASE_URL

swift build -c release
bin="$(swift build -c release --show-bin-path)/pushtrack"
"$bin" migrate

creds=.data/dev-credentials
if [[ ! -s "$creds" ]]; then
    app_json=$("$bin" app create development --format json)
    app_id=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["appId"])' <<<"$app_json")
    read_json=$("$bin" token create --role read --app "$app_id" --format json)
    admin_json=$("$bin" token create --role admin --app "$app_id" --format json)
    python3 - "$app_json" "$read_json" "$admin_json" >"$creds.tmp" <<'PY'
import json, sys
app, read, admin = (json.loads(a) for a in sys.argv[1:])
print(f"app id:       {app['appId']}")
print(f"write key:    {app['writeKey']}")
print(f"read token:   {read['token']}")
print(f"admin token:  {admin['token']}")
PY
    mv "$creds.tmp" "$creds"
    chmod 600 "$creds"
fi
echo "run: development credentials (also in $creds):"
sed 's/^/  /' "$creds"
# scripts/run-cluster.sh: the database, build, migrations and credentials, without serving.
[[ -n "${RUN_SETUP_ONLY:-}" ]] && exit 0
echo "run: serving on http://localhost:$PORT (Ctrl-C stops)"
exec "$bin" serve --port "$PORT"
