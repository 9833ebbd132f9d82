#!/usr/bin/env bash
# The accuracy benchmark (issue 6): builds in release mode, starts a fresh PostgreSQL, and runs
# pushtrack-sim: REPORTS (1,000,000) simulated reports through COLLECTORS (2) `pushtrack serve`
# processes behind HAProxy, then every campaign report read over HTTP and compared, field by
# field, with the simulator's ground truth, then `pushtrack verify`. Exit 1 on any difference.
# Environment: REPORTS, COLLECTORS, WORKERS (64), SEED (1); extra arguments go to pushtrack-sim.
set -euo pipefail
cd "$(dirname "$0")/.."
REPORTS=${REPORTS:-1000000}
COLLECTORS=${COLLECTORS:-2}
WORKERS=${WORKERS:-64}
SEED=${SEED:-1}

bench_name=accuracy
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
sim="$(dirname "$bin")/pushtrack-sim"

echo "bench: accuracy, $REPORTS reports through $COLLECTORS collector(s)" >&2
status=0
"$sim" --pushtrack "$bin" --collectors "$COLLECTORS" --reports "$REPORTS" --seed "$SEED" \
    --workers "$WORKERS" --campaigns 20 --messages-per-campaign 5 --single-share 0.02 \
    --batch-size 100 "$@" | tee "$work/accuracy.txt" || status=$?

if [[ -n "${BENCH_SUMMARY:-}" ]]; then
    python3 - "$work/accuracy.txt" "$COLLECTORS" >>"$BENCH_SUMMARY" <<'PY'
import sys
line = next((l for l in open(sys.argv[1]) if l.startswith("RESULT ")), "")
r = dict(p.split("=", 1) for p in line.split()[1:]) if line else {}
collectors = sys.argv[2]
get = lambda k: r.get(k, "?")
events = int(get("events")) if get("events").isdigit() else 0
rows = [
    ("accuracy", f"events through {collectors} collector(s)", f"{events:,}", "", f"{int(get('events_per_s')):,} events/s" if get("events_per_s").isdigit() else "", ">= 1,000,000", "pass" if events >= 1_000_000 else "FAIL"),
    ("accuracy", "report fields differing", f"{get('differences')} of {get('fields')}", "", "", "0", "pass" if get("differences") == "0" else "FAIL"),
    ("accuracy", "responses and pushtrack verify", "exact, clean" if get("pass") == "1" else "see output", "", "", "exact, clean", "pass" if get("pass") == "1" else "FAIL"),
]
for row in rows:
    print("\t".join(row))
PY
fi
exit "$status"
