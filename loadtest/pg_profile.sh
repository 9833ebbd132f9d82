#!/usr/bin/env bash
# Where the writers' PostgreSQL backends spend their CPU under BATCH-event load, by function
# (issue 17's floor): `loadtest/statement_cpu.sh` says which statement costs what; this says
# what inside them does. Builds in release mode, starts a fresh PostgreSQL and a collector, runs
# wrk (CONNECTIONS connections) and, while it runs, `perf record -g` of the backends whose
# application_name is the writers' (`pushtrack-writer`) for PERF_SECONDS. Prints their costliest
# functions by their own samples, then the share of samples spent inside each function of
# FUNCTIONS (its callees included), read from the call stacks. `A<B` counts the samples in A
# called from within B: `ExecCheckIndexConstraints<ExecSetParamPlan` is the `ON CONFLICT`
# pre-check of the key claim, whose count runs as an InitPlan of the claim's statement.
# PostgreSQL's static functions have no symbol in Debian's build: their frames read [unknown].
# Environment: BATCH (1), CONNECTIONS (64 in flight), PERF_SECONDS (6), TOP (30), FUNCTIONS (a
# list of names, see below).
# Figures, not a test: exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
BATCH=${BATCH:-1}
PERF_SECONDS=${PERF_SECONDS:-6}
TOP=${TOP:-30}
FUNCTIONS=${FUNCTIONS:-"ExecCheckIndexConstraints ExecCheckIndexConstraints<ExecSetParamPlan
ExecInsertIndexTuples ExecInsertIndexTuples<ExecSetParamPlan btinsert hashinsert heap_insert
standard_ExecutorStart ExecInitNode standard_ExecutorFinish array_recv
CommitTransactionCommand XLogFlush secure_read"}

bench_name=pg-profile
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
profile_load profile $((PERF_SECONDS + 3))
sleep 1
pids=$(psql "$DATABASE_URL" -tAc "SELECT string_agg(pid::text, ',') FROM pg_stat_activity
                                   WHERE application_name = 'pushtrack-writer'")
stored() { psql "$DATABASE_URL" -tAc "SELECT count(*) FROM events"; }
before=$(stored)
perf record -q -F 1999 -g -p "$pids" -o "$work/perf.data" -- sleep "$PERF_SECONDS" >/dev/null 2>&1
events=$(($(stored) - before))
wait "$wrk_pid"

echo
echo "perf: the writers' backends ($pids), $events events stored in ${PERF_SECONDS} s"
echo "costliest functions by their own samples (share of the backends' samples)"
perf report -i "$work/perf.data" --no-children --sort dso,sym --stdio -g none 2>/dev/null |
    awk -v top="$TOP" '/^ +[0-9]/ && shown++ < top' | cut -c1-120
echo
echo "share of the samples inside each function (callees included)"
perf script -i "$work/perf.data" -F ip,sym 2>/dev/null >"$work/stacks.txt"
# shellcheck disable=SC2086  # FUNCTIONS is a list of words
python3 loadtest/stack_shares.py "$work/stacks.txt" $FUNCTIONS
