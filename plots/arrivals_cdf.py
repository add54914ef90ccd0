#!/usr/bin/python3
"""Empirical CDF of the per-rank delays of an arrival trace (`collsim arrivals FILE --plot`).

Reads the DELAYS.csv that `collsim arrivals --plot OUT.png` writes (OUT_delays.csv: iteration,
rank, delay_s, late, last; delay = arrival - earliest arrival of the iteration) and draws three
step CDFs on a log time axis: the delay of the last rank of each iteration (the spread), the
delays of the ranks the late rule flagged, and those of every other rank. Zero delays (the
earliest rank) cannot sit on a log axis; the legend says how many there are.

    /usr/bin/python3 plots/arrivals_cdf.py DELAYS.csv [--out DIR] [--stem NAME]

Writes DIR/NAME.png and DIR/NAME.svg (default: next to the CSV, named after it).
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collsim_plot as cp  # noqa: E402  (sets the Agg backend before pyplot is imported)

COLUMNS = ["iteration", "rank", "delay_s", "late", "last"]


def read_delays(path):
    if not os.path.exists(path):
        sys.exit(f"arrivals_cdf: {path} does not exist (run collsim arrivals TRACE --plot OUT.png first)")
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            sys.exit(f"arrivals_cdf: {path}: missing columns {', '.join(missing)}")
        rows = list(reader)
    if not rows:
        sys.exit(f"arrivals_cdf: {path} has no rows")
    for number, row in enumerate(rows, start=2):
        try:
            row["delay_s"] = float(row["delay_s"])
            row["late"] = int(row["late"])
            row["last"] = int(row["last"])
        except ValueError:
            sys.exit(f"arrivals_cdf: {path}:{number}: non-numeric delay_s, late or last")
    return rows


def step_cdf(ax, values, colour, name):
    """One empirical CDF over the positive values (the fraction counts the zeros too)."""
    total = len(values)
    positive = sorted(v for v in values if v > 0)
    zeros = total - len(positive)
    if not positive:
        return
    ys = [(zeros + i + 1) / total for i in range(len(positive))]
    suffix = f", {zeros} at 0" if zeros else ""
    ax.step(positive, ys, where="post", color=colour, label=f"{name} ({total}{suffix})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="the delays CSV written by collsim arrivals --plot")
    parser.add_argument("--out", help="output directory (default: the CSV's directory)")
    parser.add_argument("--stem", help="output file name without extension (default: the CSV's)")
    args = parser.parse_args()
    rows = read_delays(args.csv)
    out_dir = args.out or os.path.dirname(os.path.abspath(args.csv))
    stem = args.stem or os.path.splitext(os.path.basename(args.csv))[0]

    iterations = len({r["iteration"] for r in rows})
    ranks = len({r["rank"] for r in rows})
    fig, axes = cp.figure()
    ax = axes[0][0]
    step_cdf(ax, [r["delay_s"] for r in rows if r["last"]], "#d62728", "last rank")
    step_cdf(ax, [r["delay_s"] for r in rows if r["late"]], "#ff7f0e", "late ranks")
    step_cdf(ax, [r["delay_s"] for r in rows if not r["late"] and not r["last"]], "#1f77b4", "other ranks")
    if any(r["delay_s"] > 0 for r in rows):
        ax.set_xscale("log")
    ax.set_xlabel("delay after the earliest arrival (s)")
    ax.set_ylabel("fraction of arrivals")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(f"Arrival delays: {iterations} iterations of {ranks} ranks")
    ax.legend(loc="lower right", fontsize="small")
    cp.save(fig, out_dir, stem)


if __name__ == "__main__":
    main()
