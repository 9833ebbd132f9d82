#!/usr/bin/env bash
# `make bench`: the benchmarks, each on a fresh PostgreSQL of its own after a release
# build: ingestion (bench.sh), report latency (report_bench.sh), accuracy of at least 1,000,000
# simulated reports (accuracy.sh), CPU per single-event request (BATCH=1 cpu_cost.sh), the cost
# curve with 20 M reports stored (cost_curve.sh, some 20 minutes of the run); then
# one summary table of their figures, the baselines measured in the same run, the ratios and
# pass/fail against the targets. Exit 1 if any fails.
# Environment: as the three scripts (DURATION, REQUESTS, REPORTS, COLLECTORS, ...).
set -uo pipefail
cd "$(dirname "$0")/.."
export BENCH_SUMMARY
BENCH_SUMMARY=$(mktemp /tmp/pushtrack-bench-summary.XXXXXX)
trap 'rm -f "$BENCH_SUMMARY"' EXIT
start=$(date +%s)
for script in bench.sh report_bench.sh accuracy.sh; do
    echo "== loadtest/$script" >&2
    loadtest/$script || echo -e "$script\texited with status $?\t\t\t\t\tFAIL" >>"$BENCH_SUMMARY"
done
# CPU per single-event request (issue 17's CPU targets): CPU time, stable on a busy box.
echo "== BATCH=1 loadtest/cpu_cost.sh" >&2
BATCH=1 loadtest/cpu_cost.sh || echo -e "cpu_cost.sh\texited with status $?\t\t\t\t\tFAIL" >>"$BENCH_SUMMARY"
# Issue 17's flat cost curve; the load's own DURATION would stretch its 20 s.
echo "== loadtest/cost_curve.sh" >&2
DURATION=20 loadtest/cost_curve.sh || echo -e "cost_curve.sh\texited with status $?\t\t\t\t\tFAIL" >>"$BENCH_SUMMARY"

echo
echo "== make bench: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(date -u +%FT%TZ), $(($(date +%s) - start)) s"
python3 - "$BENCH_SUMMARY" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
rows = [r + [""] * (7 - len(r)) for r in rows]
header = ["benchmark", "figure", "measured", "baseline (same run)", "ratio", "target", "result"]
widths = [max(len(r[i]) for r in rows + [header]) for i in range(7)]
for r in [header] + rows:
    print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
failed = [r for r in rows if r[6] == "FAIL"]
print()
print(f"{len(failed)} of {sum(1 for r in rows if r[6])} targets failed" if failed else "every target passed")
sys.exit(1 if failed else 0)
PY
