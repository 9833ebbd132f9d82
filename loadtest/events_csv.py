"""Writes N raw-event rows as CSV in the column order bench.sh copies, shaped like events.lua's."""
import json
import sys
from datetime import datetime, timezone

n = int(sys.argv[1])
now = datetime.now(timezone.utc).isoformat()
out = sys.stdout
for i in range(n):
    msg = i % 97
    category = "push_click" if i % 5 == 0 else "push_arrival"
    out.write(
        f'{now},app_bench,{now},{now},skew_corrected,copy-{i},e:copy-{i},push,{category},view,'
        f'push_Sale {msg},m{msg},c{msg % 7},dev{i * 7919 % 1000000},{"true" if i % 3 == 0 else "false"},'
        f'extension,,ios,17.5,3.2.1,,en-US,true,accepted\n')
