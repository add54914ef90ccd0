"""Shared helpers for collsim's plot scripts: read results CSV files, save PNG + SVG.

Plot scripts never simulate; they read what `collsim run` wrote. They must run under Debian's
/usr/bin/python3, the interpreter that sees python3-matplotlib.
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display on servers and CI
import matplotlib.pyplot as plt  # noqa: E402

# One colour and marker per algorithm, used by every plot so figures can be compared.
STYLE = {
    "stragglar": ("#d62728", "o"),
    "ring": ("#1f77b4", "s"),
    "recursive_halving_doubling": ("#2ca02c", "^"),
    "recursive_doubling": ("#9467bd", "v"),
    "binomial_tree": ("#8c564b", "D"),
    "double_binary_tree": ("#e377c2", "P"),
    "direct": ("#7f7f7f", "X"),
    "straggler_tree": ("#bcbd22", "*"),
}

NUMERIC = {"n", "size_bytes", "delay_s", "trial", "seed", "time_s", "time_after_last_arrival_s",
           "speedup_vs_ring", "algbw_GBps", "busbw_GBps", "hidden_delay_fraction", "straggler",
           "num_stragglers", "persistence", "oversubscription", "mean_s", "p50_s", "p99_s"}


def read_rows(path):
    """Rows of a collsim CSV as dicts, numeric columns converted to float."""
    if not os.path.exists(path):
        sys.exit(f"plot: {path} does not exist (run the study first)")
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        for key, value in row.items():
            if key in NUMERIC and value not in ("", None):
                try:
                    row[key] = float(value)
                except ValueError:
                    sys.exit(f"plot: {path}: column {key} has non-numeric value {value!r}")
    if not rows:
        sys.exit(f"plot: {path} has no rows")
    return rows


def style(algorithm):
    return STYLE.get(algorithm, ("#333333", "."))


def save(fig, out_dir, stem):
    """Writes stem.png and stem.svg in out_dir and prints their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for ext in ("png", "svg"):
        path = os.path.join(out_dir, f"{stem}.{ext}")
        fig.savefig(path, dpi=150, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    print("wrote " + " and ".join(paths))


def human_size(size_bytes):
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size_bytes >= factor:
            return f"{size_bytes / factor:g} {unit}"
    return f"{size_bytes:g} B"
