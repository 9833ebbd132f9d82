#!/usr/bin/env bash
# Slow clients (issue 7): builds in release mode, starts a fresh PostgreSQL and a collector with
# its defaults, measures single-event requests paced to about half the maximum rate on 64
# connections, then the same while SLOW (1,000) idle and trickling connections are held open,
# and prints both latencies. Target: p99 ≤ 25 ms with the slow clients (the bound of issue 3 at
# half rate). Exit status 1 when the target is missed or a request failed.
# Environment: DURATION (seconds per run, 10), SLOW (1000).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
SLOW=${SLOW:-1000}

bench_name=slow
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
key=$(create_app slow writeKey)

start_server

# Single-event requests at 64 connections: $1 requests/s offered (0: flat out), $2 seconds.
single() { run_wrk 1 "$1" "$2"; }

echo "slow: measuring the maximum single-event rate" >&2
max=$(single 0 5)
# Half the maximum, offered on a fixed schedule (as bench.sh paces (h)).
half=$(half_rate "$max")
echo "slow: (1) paced to $half req/s, half of $(field "$max" rps), no slow clients, ${DURATION}s" >&2
base=$(single "$half" "$DURATION")
echo "slow: (2) the same with $SLOW slow connections held open" >&2
mkfifo "$work/hold"
python3 loadtest/slow_clients.py 127.0.0.1 "$http_port" "$SLOW" <"$work/hold" >"$work/slow.out" &
slow_pid=$!
exec 3>"$work/hold"
until grep -q opened "$work/slow.out" 2>/dev/null; do sleep 0.1; done
with=$(single "$half" "$DURATION")
exec 3>&-
wait "$slow_pid"
cat "$work/slow.out"

python3 - "$base" "$with" "$SLOW" <<'PY'
import re, sys
def parse(text):
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", text)}
base, slow, count = parse(sys.argv[1]), parse(sys.argv[2]), int(sys.argv[3])
print()
print(f"{'run':34} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}")
for name, run in (("(1) no slow clients", base), (f"(2) with {count} slow connections", slow)):
    print(f"{name:34} {run['rps']:>8,.0f} {run['p50_ms']:>8.2f} {run['p99_ms']:>8.2f} {run['errors']:>7.0f}")
ok = slow["p99_ms"] <= 25 and slow["errors"] == 0
print(f"\np99 with slow clients <= 25 ms and no errors: {'pass' if ok else 'FAIL'} "
      f"(p99 ratio to the baseline {slow['p99_ms'] / base['p99_ms']:.2f})")
sys.exit(0 if ok else 1)
PY
