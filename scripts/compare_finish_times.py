#!/usr/bin/env python3
"""Compares two finish-time files of collsim_bench_contention --finish-times, rank by rank.

Prints, per (algorithm, n), the largest relative difference and the rank where it occurs, and
exits 1 when any difference exceeds --rel (default 1e-9) or the files hold different runs.
Why: the replay engine's speed-ups must leave every simulated time as it was; the bench's own
--check compares two solvers of one build, this compares two builds.

usage: compare_finish_times.py BEFORE AFTER [--rel 1e-9]
"""
import sys


def load(path):
    runs = {}
    with open(path) as f:
        for line in f:
            algorithm, n, rank, finish_s = line.split()
            runs.setdefault((algorithm, int(n)), {})[int(rank)] = float(finish_s)
    return runs


def main(argv):
    args = [a for a in argv[1:]]
    rel = 1e-9
    if "--rel" in args:
        i = args.index("--rel")
        rel = float(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    before, after = load(args[0]), load(args[1])
    bad = False
    for key in sorted(set(before) | set(after)):
        if key not in before or key not in after or set(before[key]) != set(after[key]):
            print(f"{key[0]} n={key[1]}: not in both files (or different ranks)")
            bad = True
            continue
        worst, where = 0.0, 0
        for rank, b in before[key].items():
            d = abs(after[key][rank] - b) / abs(b) if b != 0 else abs(after[key][rank])
            if d > worst:
                worst, where = d, rank
        print(f"{key[0]} n={key[1]}: largest relative difference {worst:.2e} (rank {where})")
        bad = bad or worst > rel
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
