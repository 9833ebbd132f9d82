#!/usr/bin/env python3
"""Compares saved outputs of loadtest/statement_cpu.sh as shares, so that runs of two builds
taken in turn (A B B A) can be compared on a machine whose speed drifts from minute to minute.

A change to one statement is read against a statement it did not change, run in the same
minute: each row gives the raw rows' statement, the rollup deltas' and all statements as
multiples of the key claim's CPU (execute and bind), and the key claim and all statements as
multiples of `COMMIT`'s (its WAL flush: the same work whatever the statements bind). The
collector's writer threads are given as a multiple of its libmicrohttpd workers.

Usage: loadtest/statement_shares.py FILE...   (each FILE: statement_cpu.sh's output)
"""
import re
import sys


def figures(path):
    text = open(path).read()

    def number(pattern):
        match = re.search(pattern, text, re.M)
        return float(match.group(1).replace(",", "")) if match else 0.0

    def statement(kind, start):
        return number(r"^" + kind + r"\s+" + re.escape(start) + r".*?\s+([\d.]+)\s+[\d.,]+\s+[\d,]+$")

    def both(start):
        return statement("execute", start) + statement("bind", start)

    return {
        "rps": number(r"rps=([\d.]+)"),
        "per_commit": number(r"([\d.]+) per group commit"),
        "claim": both("WITH claimed"),
        # Groups over 200 events send their raw rows by COPY instead.
        "events": both("INSERT INTO events") + statement("query", "COPY events"),
        "deltas": both("INSERT INTO report_deltas"),
        "commit": statement("execute", "COMMIT"),
        "all": number(r"^all statements\s+([\d.]+)"),
        "http": number(r"^HTTP: libmicrohttpd.*?([\d.]+)$"),
        "writers": number(r"^group-commit writers.*?([\d.]+)$"),
    }


def share(part, whole):
    return f"{part / whole:.3f}" if whole else "-"


print(f"{'run':28} {'req/s':>7} {'ev/commit':>9} {'claim µs':>8} {'events/claim':>12} "
      f"{'deltas/claim':>12} {'all/claim':>9} {'claim/COMMIT':>12} {'all/COMMIT':>10} "
      f"{'writers/HTTP':>12}")
for path in sys.argv[1:]:
    f = figures(path)
    print(f"{path[-28:]:28} {f['rps']:>7.0f} {f['per_commit']:>9.1f} {f['claim']:>8.1f} "
          f"{share(f['events'], f['claim']):>12} {share(f['deltas'], f['claim']):>12} "
          f"{share(f['all'], f['claim']):>9} {share(f['claim'], f['commit']):>12} "
          f"{share(f['all'], f['commit']):>10} {share(f['writers'], f['http']):>12}")
