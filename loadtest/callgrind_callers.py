#!/usr/bin/env python3
"""Who calls a function, and how often, in a callgrind profile (loadtest/callgrind.sh's .out).

callgrind counts calls as well as instructions, so the runtime's copy and release functions
name the types that are copied: `initializeWithCopy for ValidEvent` called 4 times per event
is four copies of the event. callgrind_annotate shows instructions, not these counts.

Usage: loadtest/callgrind_callers.py FILE.out 'NAME[|NAME…]' [TOP]
  NAME is the start of a demangled function name (`swift demangle --simplified`), such as
  `swift_retain`, `initializeWithCopy for ValidEvent` or `IngestBatch.write(on:now:)`;
  recursion marks (`'2`) are folded in. For each NAME it prints the calls in all and its TOP
  (15) callers with their counts. Divide by the events of the run for a count per event.
"""
import re
import subprocess
import sys


def read(path):
    """The profile's function names by id, and for each callee id, its callers' call counts."""
    names, calls = {}, {}
    caller = callee = None
    with open(path) as profile:
        for line in profile:
            match = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
            if match:
                kind, ident, name = match.groups()
                if name:
                    names[ident] = name.strip()
                if kind == "fn":
                    caller = ident
                else:
                    callee = ident
                continue
            match = re.match(r"calls=(\d+)", line)
            if match and callee is not None:
                counts = calls.setdefault(callee, {})
                counts[caller] = counts.get(caller, 0) + int(match.group(1))
    return names, calls


def demangled(names):
    idents = list(names)
    text = subprocess.run(
        ["swift", "demangle", "--simplified"],
        input="\n".join(names[ident] for ident in idents),
        capture_output=True, text=True, check=True).stdout.split("\n")
    return dict(zip(idents, text))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    path, wanted = sys.argv[1], sys.argv[2].split("|")
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    names, calls = read(path)
    readable = demangled(names)
    for prefix in wanted:
        callers = {}
        for callee, counts in calls.items():
            if readable.get(callee, "").split("'")[0].startswith(prefix):
                for caller, count in counts.items():
                    callers[caller] = callers.get(caller, 0) + count
        print(f"== {prefix}: {sum(callers.values()):,} calls")
        for caller, count in sorted(callers.items(), key=lambda item: -item[1])[:top]:
            print(f"{count:>11,}  {readable.get(caller, '?')[:150]}")


if __name__ == "__main__":
    main()
