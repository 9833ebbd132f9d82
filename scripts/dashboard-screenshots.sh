#!/usr/bin/env bash
# Screenshots of the dashboard in a real browser (Debian's headless chromium), at laptop and
# phone sizes, into .data/screenshots/ (OUT_DIR to change).
#
# Installs chromium (scripts/deps.sh --dashboard) and websocket-client (in .data/venv) when
# missing, starts a throwaway PostgreSQL and `pushtrack serve` (release) on free ports, loads fixture
# data through the API as a sender and the apps would (three campaigns, ~6,000 devices, events
# over the last 44 hours), signs in with curl (POST /dashboard/sign-in with a read token) to get
# the session cookie, and has chromium open each page with that cookie over the Chrome DevTools
# Protocol (scripts/dashboard_screenshots.py); then signs in through the form in the browser too
# and checks that it lands on /dashboard with an HttpOnly, SameSite=Strict cookie. Exits 1 when
# a step fails or the server logs an error. Cleans up on exit, even on failure.
#
# Environment: OUT_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
OUT_DIR=${OUT_DIR:-.data/screenshots}

scripts/deps.sh --dashboard
venv=.data/venv
if ! "$venv/bin/python" -c 'import websocket' 2>/dev/null; then
    echo "screenshots: installing websocket-client into $venv" >&2
    mkdir -p .data
    [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet websocket-client
fi

# A release build and a throwaway PostgreSQL, removed on exit (the benchmarks' setup).
bench_name=screenshots deps_option="" warm_wal=0
# shellcheck source=../loadtest/fresh.sh
source loadtest/fresh.sh
app=$("$bin" app create "Demo shop" --format json)
app_id=$(json_field appId <<<"$app")
write_key=$(json_field writeKey <<<"$app")
admin=$("$bin" token create --role admin --app "$app_id" --format json | json_field token)
read=$("$bin" token create --role read --app "$app_id" --format json | json_field token)

start_server
base="http://127.0.0.1:$http_port"

"$venv/bin/python" scripts/dashboard_screenshots.py load "$base" "$admin" "$app_id" "$write_key"

# Sign in as a browser would, with the token in the form body (never in a URL).
session=$(curl -s -o /dev/null -D - -X POST "$base/dashboard/sign-in" \
    --data-urlencode "token=$read" | tr -d '\r' |
    sed -n 's/^[Ss]et-[Cc]ookie: pushtrack_session=\([^;]*\);.*/\1/p')
[[ -n "$session" ]] || { echo "screenshots: sign-in gave no session cookie" >&2; exit 1; }

rm -f "$OUT_DIR"/*.png
"$venv/bin/python" scripts/dashboard_screenshots.py shoot "$base" "$session" "$read" "$root/$OUT_DIR"
if grep -q 'level=error' "$work/server.log"; then
    echo "screenshots: the server logged errors:" >&2
    grep 'level=error' "$work/server.log" | tail -20 >&2
    exit 1
fi
echo "screenshots: saved in $OUT_DIR" >&2
