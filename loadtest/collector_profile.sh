#!/usr/bin/env bash
# Where the collector's CPU goes under single-event load, the kernel's part included (callgrind,
# loadtest/callgrind.sh, counts user-mode instructions only). Builds in release mode, starts a
# fresh PostgreSQL and a collector, then runs wrk (CONNECTIONS connections, BATCH-event
# requests) and, while it runs:
#   - `perf record` of the collector for PERF_SECONDS: its samples by thread kind (libmicrohttpd's
#     workers, the writers, the rest) and, in each, by kernel and user mode and by binary, then
#     the costliest kernel and user symbols of each;
#   - `strace -c -f` of the collector for STRACE_SECONDS: the system calls per event stored.
# strace slows the collector while it is attached, so its counts are per event, not per second.
# Environment: BATCH (1), CONNECTIONS (64 in flight), PERF_SECONDS (5), STRACE_SECONDS (4), TOP
# (12 symbols per list).
# Figures, not a test: exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
BATCH=${BATCH:-1}
PERF_SECONDS=${PERF_SECONDS:-5}
STRACE_SECONDS=${STRACE_SECONDS:-4}
TOP=${TOP:-12}

bench_name=collector-profile
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
command -v strace >/dev/null || { apt-get update -qq && apt-get install -y -qq strace >/dev/null; }
profile_load profile $((PERF_SECONDS + STRACE_SECONDS + 4))
sleep 1
stored() { psql "$DATABASE_URL" -tAc "SELECT count(*) FROM events"; }
before=$(stored)
perf record -q -F 1999 -g -p "$server_pid" -o "$work/perf.data" -- sleep "$PERF_SECONDS" \
    >/dev/null 2>&1
perf_events=$(($(stored) - before))
before=$(stored)
timeout -s INT "$STRACE_SECONDS" strace -c -f -p "$server_pid" -o "$work/strace.txt" \
    >/dev/null 2>&1 || true
strace_events=$(($(stored) - before))
wait "$wrk_pid"

echo
echo "perf: $perf_events events stored in ${PERF_SECONDS} s; share of the collector's samples"
perf report -i "$work/perf.data" --no-children --sort comm,dso --stdio -g none \
    >"$work/by_dso.txt" 2>/dev/null
python3 - "$work/by_dso.txt" <<'PY'
import re, sys
kinds, libraries = {}, {}
for line in open(sys.argv[1]):
    m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+(\S+)", line)
    if not m:
        continue
    share, comm, dso = float(m[1]), m[2], m[3]
    kind = ("libmicrohttpd workers" if comm.startswith("MHD")
            else "writers" if comm.startswith("writer") else "the rest")
    mode = "kernel" if dso.startswith("[kernel") else "user"
    kinds.setdefault(kind, {"kernel": 0.0, "user": 0.0})[mode] += share
    libraries.setdefault(kind, {}).setdefault(dso, 0.0)
    libraries[kind][dso] += share
print(f"{'threads':24} {'all':>7} {'user':>7} {'kernel':>7}")
for kind in ["libmicrohttpd workers", "writers", "the rest"]:
    k = kinds.get(kind, {"kernel": 0.0, "user": 0.0})
    print(f"{kind:24} {k['user'] + k['kernel']:>6.1f}% {k['user']:>6.1f}% {k['kernel']:>6.1f}%")
# Where each kind's samples fall by binary: the Swift runtime (libswiftCore.so: reference
# counting, allocation, collections), the allocator, the kernel, the server's own code.
for kind in ["libmicrohttpd workers", "writers"]:
    dsos = libraries.get(kind, {})
    total = sum(dsos.values()) or 1
    top = sorted(dsos.items(), key=lambda item: -item[1])[:5]
    print(f"{kind} by binary: " + ", ".join(f"{dso} {100 * share / total:.0f}%" for dso, share in top))
PY
for comm in MHD-worker writer-0,writer-1; do
    echo
    echo "costliest symbols of $comm (share of all the collector's samples)"
    perf report -i "$work/perf.data" --no-children --comm "$comm" --sort dso,sym --stdio \
        -g none 2>/dev/null | awk -v top="$TOP" '/^ +[0-9]/ && shown++ < top' | cut -c1-150
done

echo
echo "strace: $strace_events events stored in ${STRACE_SECONDS} s; system calls per event"
# strace -c's rows: % time, seconds, usecs/call, calls, [errors,] syscall.
awk -v n="$strace_events" '$1 ~ /^[0-9.]+$/ && $NF != "total" && n > 0 {
    printf "%-20s %8.2f\n", $NF, $4 / n
}' "$work/strace.txt" | sort -k2 -nr | awk -v top="$TOP" 'NR <= top'
