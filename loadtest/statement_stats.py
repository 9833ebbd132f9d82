"""PostgreSQL's CPU per statement, from a server log written with log_statement_stats on.

    python3 loadtest/statement_stats.py LABEL=LOG:EVENTS [LABEL=LOG:EVENTS ...]

For each log (the events the load stored while it was written after the colon), sums the
rusage PostgreSQL logs after every parse, bind and execute message (user and system CPU), by
message kind and the statement's first 58 characters, and prints µs per event (and, with one
log, µs per call and calls), the costliest first. With two or more logs the columns stand side
by side, with the change from the first: where a second state (a stored database, a setting)
spends its CPU. Used by loadtest/statement_cpu.sh and loadtest/cost_curve.sh (STATEMENTS=1).
"""
import collections
import re
import sys

ENTRY = re.compile(
    r"LOG:  (\w+)(?: MESSAGE)? STATISTICS\n.*?! system usage stats:\n\t!\t([\d.]+) s user, "
    r"([\d.]+) s system.*?STATEMENT:  (.*?)\n(?=\d{4}-|\Z)", re.S)


def statements(path):
    """{"kind statement": [cpu seconds, calls]} of the log at path."""
    found = collections.defaultdict(lambda: [0.0, 0])
    for kind, user, system, sql in ENTRY.findall(open(path, errors="replace").read()):
        sql = re.sub(r"\s+", " ", sql)[:58]
        key = f"{kind.lower():8} {sql}"
        found[key][0] += float(user) + float(system)
        found[key][1] += 1
    return found


def main(arguments):
    runs = []
    for argument in arguments:
        label, rest = argument.split("=", 1)
        path, events = rest.rsplit(":", 1)
        runs.append((label, statements(path), max(1, int(events))))
    per_event = lambda cpu, events: cpu / events * 1e6
    keys = sorted({key for _, found, _ in runs for key in found},
                  key=lambda key: -max(per_event(found.get(key, [0])[0], events)
                                       for _, found, events in runs))[:14]
    if len(runs) == 1:
        _, found, events = runs[0]
        print(f"\n{'PostgreSQL CPU by statement':68} {'µs/event':>9} {'µs/call':>9} {'calls':>7}")
        for key in keys:
            cpu, calls = found[key]
            print(f"{key:68} {per_event(cpu, events):9.1f} {cpu / calls * 1e6:9.1f} {calls:7,}")
        print(f"{'all statements':68} {per_event(sum(c for c, _ in found.values()), events):9.1f}")
        return
    print(f"\n{'PostgreSQL CPU by statement, µs/event':68}"
          + "".join(f" {label:>9}" for label, _, _ in runs) + f" {'change':>9}")
    rows = [(key, [per_event(found.get(key, [0])[0], events) for _, found, events in runs])
            for key in keys]
    rows.append(("all statements", [per_event(sum(c for c, _ in found.values()), events)
                                    for _, found, events in runs]))
    for key, values in rows:
        print(f"{key:68}" + "".join(f" {v:9.1f}" for v in values) + f" {values[-1] - values[0]:+9.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
