#!/usr/bin/python3
"""Measured vs predicted collective times from `collsim calibrate` (its <model>_fit.csv).

Top: time against size per input, measured as markers, the fitted model as lines (the regime
model solid, the single alpha-beta fit dashed when it differs). Bottom: relative error
(predicted - measured) / measured; filled markers were fitted, hollow ones cross-predicted.

    /usr/bin/python3 plots/calibration_fit.py FIT.csv [--out DIR] [--stem NAME]

Writes DIR/NAME.png and DIR/NAME.svg (default: next to the CSV, named after it).
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collsim_plot  # noqa: E402  (sets the Agg backend before pyplot is imported)
import matplotlib.pyplot as plt  # noqa: E402

COLUMNS = ["source", "line", "collective", "algorithm", "n", "size_bytes", "measured_s", "predicted_s",
           "rel_error", "predicted_single_s", "rel_error_single", "role", "regime"]
NUMERIC = ["n", "size_bytes", "measured_s", "predicted_s", "rel_error", "predicted_single_s", "rel_error_single"]
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"]


def read_fit(path):
    if not os.path.exists(path):
        sys.exit(f"calibration_fit: {path} does not exist (run collsim calibrate first)")
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            sys.exit(f"calibration_fit: {path}: missing columns {', '.join(missing)}")
        rows = list(reader)
    if not rows:
        sys.exit(f"calibration_fit: {path} has no rows")
    for number, row in enumerate(rows, start=2):
        for key in NUMERIC:
            try:
                row[key] = float(row[key])
            except ValueError:
                sys.exit(f"calibration_fit: {path}:{number}: column {key} has non-numeric value {row[key]!r}")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="the measured-vs-predicted CSV written by collsim calibrate")
    parser.add_argument("--out", help="output directory (default: the CSV's directory)")
    parser.add_argument("--stem", help="output file name without extension (default: the CSV's)")
    args = parser.parse_args()
    rows = read_fit(args.csv)
    out_dir = args.out or os.path.dirname(os.path.abspath(args.csv))
    stem = args.stem or os.path.splitext(os.path.basename(args.csv))[0]

    sources = []
    for row in rows:
        if row["source"] not in sources:
            sources.append(row["source"])
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 8), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    for index, source in enumerate(sources):
        mine = sorted((r for r in rows if r["source"] == source), key=lambda r: r["size_bytes"])
        colour = COLOURS[index % len(COLOURS)]
        first = mine[0]
        role = "fitted" if first["role"] == "fit" else "cross-predicted"
        label = f"{first['collective']} n={int(first['n'])} ({role})"
        sizes = [r["size_bytes"] for r in mine]
        filled = first["role"] == "fit"
        top.plot(sizes, [r["measured_s"] * 1e6 for r in mine], "o", color=colour,
                 markerfacecolor=colour if filled else "none", label=f"{label}: measured")
        top.plot(sizes, [r["predicted_s"] * 1e6 for r in mine], "-", color=colour,
                 label=f"{label}: {first['algorithm']} schedule")
        if any(abs(r["predicted_single_s"] - r["predicted_s"]) > 1e-12 for r in mine):
            top.plot(sizes, [r["predicted_single_s"] * 1e6 for r in mine], "--", color=colour, alpha=0.6,
                     label=f"{label}: single alpha-beta fit")
        bottom.plot(sizes, [100.0 * r["rel_error"] for r in mine], "o-", color=colour,
                    markerfacecolor=colour if filled else "none", label=label)
    top.set_xscale("log", base=2)
    top.set_yscale("log")
    top.set_ylabel("time (us)")
    top.set_title("collsim calibrate: measured vs predicted")
    top.grid(True, which="both", alpha=0.3)
    top.legend(fontsize=7)
    bottom.axhline(0.0, color="black", linewidth=0.8)
    bottom.set_xscale("log", base=2)
    bottom.set_ylabel("(predicted - measured) / measured (%)")
    bottom.set_xlabel("size (bytes; the nccl-tests size column)")
    ticks = [2.0 ** k for k in range(0, 36, 4)
             if min(r["size_bytes"] for r in rows) / 2 <= 2.0 ** k <= max(r["size_bytes"] for r in rows) * 2]
    bottom.set_xticks(ticks)
    bottom.set_xticklabels([collsim_plot.human_size(t) for t in ticks])
    bottom.grid(True, which="both", alpha=0.3)
    bottom.legend(fontsize=7)
    collsim_plot.save(fig, out_dir, stem)


if __name__ == "__main__":
    main()
