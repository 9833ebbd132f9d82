#!/usr/bin/env bash
# `make test`: a throwaway PostgreSQL cluster, then swift build and swift test against it.
# The cluster is stopped and deleted on exit, whether the tests pass or not.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=$(mktemp -d /tmp/pushtrack-test-pg.XXXXXX)
chmod 755 "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
    scripts/pg.sh stop "$dir/data" immediate || true
    rm -rf "$dir"
}
trap cleanup EXIT

scripts/pg.sh start "$dir/data" "$port"
export DATABASE_URL
DATABASE_URL=$(scripts/pg.sh url "$port")
export PUSHTRACK_TEST_PGDATA="$dir/data" PUSHTRACK_TEST_PGPORT="$port"
echo "test: PostgreSQL on port $port ($dir/data)"

swift build --build-tests
export PUSHTRACK_BIN
PUSHTRACK_BIN="$(swift build --show-bin-path)/pushtrack"
swift test --skip-build
