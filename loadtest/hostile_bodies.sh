#!/usr/bin/env bash
# What hostile request bodies cost the collector: builds in release mode, starts a fresh
# PostgreSQL and a collector, posts each body below once with curl (each under the 1 MiB body
# limit unless said otherwise) and prints its status, the wall time of the request and the
# collector's CPU for it. A body whose CPU grows with the square of its size shows here as
# seconds where the others take milliseconds (one event of 85,000 unknown members took 7.92 s
# before the scans bounded the members they compare one by one, loadtest/README.md).
# Figures, not a test: exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

bench_name=hostile
# shellcheck source=loadtest/fresh.sh
source loadtest/fresh.sh
key=$(create_app hostile writeKey)
start_server
mkdir -p "$work/bodies"
python3 - "$work/bodies" <<'PY'
import sys
out = sys.argv[1]
base = '"pageId":"home","category":"view"'
def event(extra=""):
    return "{" + base + extra + "}"
bodies = {
    "85,000 unknown members in one event": event("," + ",".join(f'"k{i}":0' for i in range(85000))),
    "60,000 keys in properties": event(',"properties":{' + ",".join(f'"k{i}":{i}' for i in range(60000)) + "}"),
    "400,000-element array in properties": event(',"properties":{"a":[' + ",".join("0" for _ in range(400000)) + "]}"),
    "900 KB number in properties": event(',"properties":{"n":' + "9" * 900000 + "}"),
    "900 KB number as timestamp": event(',"timestamp":' + "9" * 900000),
    "150,000 escapes in a label": event(',"label":"' + "\\u00e9" * 150000 + '"'),
    "properties nested 60 deep": event(',"properties":' + "[" * 60 + "]" * 60),
    "500 events, 17 unknown members each": "[" + ",".join(event("," + ",".join(f'"x{j}":{j}' for j in range(17))) for _ in range(500)) + "]",
    "500 events, one eventId": "[" + ",".join(event(',"eventId":"same"') for _ in range(500)) + "]",
    "1,000 events (over the batch limit)": "[" + ",".join(event() for _ in range(1000)) + "]",
}
for index, (name, body) in enumerate(bodies.items()):
    with open(f"{out}/{index:02d}.json", "w") as f:
        f.write(body)
    with open(f"{out}/{index:02d}.name", "w") as f:
        f.write(name)
# A Device-Info header of 1,400 unknown members (about 13 KB: under the connection's 16 KiB).
with open(f"{out}/device_info", "w") as f:
    f.write('{"platform":"ios",' + ",".join(f'"k{i}":0' for i in range(1400)) + "}")
PY
printf '\n%-40s %9s %6s %10s %12s\n' "body" "bytes" "status" "wall (s)" "collector CPU (s)"
# Posts body $2 (a file); prints its row, named $1.
post() {
    local cpu_before result cpu
    cpu_before=$(proc_cpu "$server_pid")
    result=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' -H "X-App-Key: $key" \
        -H "Content-Type: application/json" --data-binary @"$2" \
        "http://127.0.0.1:$http_port/customer-track/upload-event")
    cpu=$(python3 -c "print(f'{$(proc_cpu "$server_pid") - $cpu_before:.2f}')")
    printf '%-40s %9s %6s %10s %12s\n' "$1" "$(stat -c %s "$2")" "${result% *}" \
        "${result#* }" "$cpu"
}
for body in "$work"/bodies/*.json; do
    post "$(cat "${body%.json}.name")" "$body"
done
# 100 single events, each with the header: the header's cost shows summed over them.
echo '{"pageId":"home","category":"view"}' >"$work/one.json"
cpu_before=$(proc_cpu "$server_pid")
answered=$(for _ in $(seq 100); do
    curl -s -o /dev/null -w '%{http_code}\n' -H "X-App-Key: $key" \
        -H "Content-Type: application/json" -H "Device-Info: $(cat "$work/bodies/device_info")" \
        --data-binary @"$work/one.json" "http://127.0.0.1:$http_port/customer-track/upload-event"
done | sort | uniq -c | awk '{printf "%s%sx%s", sep, $2, $1; sep = ","}')
printf '%-40s %9s %6s %10s %12s\n' "Device-Info of 1,400 members, 100 times" \
    "$(stat -c %s "$work/bodies/device_info")" "$answered" "" \
    "$(python3 -c "print(f'{$(proc_cpu "$server_pid") - $cpu_before:.2f}')")"
