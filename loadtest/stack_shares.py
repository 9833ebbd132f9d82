#!/usr/bin/env python3
"""The share of perf samples spent inside named functions, callees included, from call stacks.

Usage: loadtest/stack_shares.py STACKS NAME [NAME…]
  STACKS is `perf script -F ip,sym` of a `perf record -g` profile: one sample per block of
  frames, innermost first, blocks apart by a blank line. NAME counts the samples with that
  function anywhere on the stack (once per sample, however deep the recursion). `A<B` counts
  the samples with A on the stack and B somewhere below it (A called from within B).
"""
import sys


def samples(path):
    """Each sample's function names, innermost first."""
    frames = []
    for line in open(path):
        parts = line.split(None, 1)
        if not parts:
            if frames:
                yield frames
            frames = []
            continue
        frames.append(parts[1].strip() if len(parts) > 1 else "[unknown]")
    if frames:
        yield frames


def inside(frames, name):
    """Whether `name` (a function, or `A<B`) holds for the sample."""
    if "<" not in name:
        return name in frames
    inner, outer = name.split("<", 1)
    if inner not in frames:
        return False
    return outer in frames[frames.index(inner) + 1:]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    stacks = list(samples(sys.argv[1]))
    print(f"{len(stacks):,} samples")
    for name in sys.argv[2:]:
        count = sum(1 for frames in stacks if inside(frames, name))
        share = 100.0 * count / len(stacks) if stacks else 0.0
        print(f"{name:50} {share:6.2f}%")


if __name__ == "__main__":
    main()
