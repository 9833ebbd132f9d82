#!/usr/bin/env bash
# Checks a real server against openapi.yaml with Schemathesis (property-based API testing).
#
# Installs Schemathesis in .data/venv when missing, starts a throwaway PostgreSQL on a free port
# in a temporary folder, migrates, creates an app (write key) and an admin token, starts
# `pushtrack serve` on another free port, and runs
#   schemathesis run openapi.yaml --url http://127.0.0.1:PORT
# with both credentials and the checks not_a_server_error, status_code_conformance,
# content_type_conformance, response_schema_conformance. Bounded (MAX_EXAMPLES test cases per
# operation, MAX_TIME seconds at most); stops the server and the database and deletes the folder
# on exit, even on failure. Exit status: Schemathesis's.
#
# Environment: MAX_EXAMPLES (50), MAX_TIME (300), SEED (a fixed seed for a reproducible run),
# CONFIGURATION (debug or release; debug by default), REPORT_DIR (keep a JUnit/NDJSON report
# there). Extra arguments are passed to `schemathesis run`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
MAX_EXAMPLES=${MAX_EXAMPLES:-50}
MAX_TIME=${MAX_TIME:-300}
CONFIGURATION=${CONFIGURATION:-debug}

venv=.data/venv
if [[ ! -x "$venv/bin/schemathesis" ]]; then
    echo "schemathesis: installing Schemathesis into $venv" >&2
    mkdir -p .data
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
    "$venv/bin/pip" install --quiet schemathesis
fi

bench_name=schemathesis build_configuration=$CONFIGURATION deps_option="" warm_wal=0
# shellcheck source=../loadtest/fresh.sh
source loadtest/fresh.sh
app=$("$bin" app create schemathesis --format json)
write_key=$(json_field writeKey <<<"$app")
# An admin token for that app: a generated body then reaches the database (a token for every
# app would need a generated `appId` naming a real app).
admin_token=$("$bin" token create --role admin --app "$(json_field appId <<<"$app")" --format json |
    json_field token)

start_server

args=(
    run "$root/openapi.yaml"
    --url "http://127.0.0.1:$http_port"
    -H "X-App-Key: $write_key"
    -H "Authorization: Bearer $admin_token"
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance
    --max-examples "$MAX_EXAMPLES"
    --max-time "$MAX_TIME"
    --request-timeout 10
    --generation-database none
    --no-color
)
[[ -n "${SEED:-}" ]] && args+=(--seed "$SEED")
[[ -n "${REPORT_DIR:-}" ]] && args+=(--report junit,ndjson --report-dir "$(realpath -m "$REPORT_DIR")")

status=0
# Run from the temporary folder, so that Schemathesis's own files (.schemathesis/) go with it.
(cd "$work" && timeout --signal=INT --kill-after=30 "$((MAX_TIME + 120))" \
    "$root/$venv/bin/schemathesis" "${args[@]}" "$@") || status=$?
if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "schemathesis: the server died; the end of its log:" >&2
    tail -40 "$work/server.log" >&2
    [[ $status -eq 0 ]] && status=1
fi
if grep -q 'level=error' "$work/server.log"; then
    echo "schemathesis: the server logged errors:" >&2
    grep 'level=error' "$work/server.log" | tail -20 >&2
fi
exit "$status"
