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

# Presentation only: one colour and marker per algorithm, so figures can be compared. Which
# algorithms exist and their order come from the algorithm table (see ordered()); an algorithm
# missing here is still plotted, in grey with its registry name.
STYLE = {
    "stragglar": ("#d62728", "o"),
    "stragglar_online": ("#ff7f0e", "h"),
    "ring": ("#1f77b4", "s"),
    "recursive_halving_doubling": ("#2ca02c", "^"),
    "recursive_halving_doubling_fold": ("#98df8a", "<"),
    "recursive_doubling": ("#9467bd", "v"),
    "binomial_tree": ("#8c564b", "D"),
    "double_binary_tree": ("#e377c2", "P"),
    "direct": ("#7f7f7f", "X"),
    "straggler_tree": ("#bcbd22", "*"),
    "hierarchical": ("#17becf", "h"),
    "hierarchical_rhd": ("#b8860b", "p"),
    "ring_multichannel": ("#aec7e8", "H"),
    "nccl_tree": ("#c5b0d5", "d"),
    "stragglar_cluster": ("#8b0000", "*"),
    "nvls": ("#393b79", "8"),
    "nvls_tree": ("#5254a3", "d"),
    "nccl": ("#000000", "x"),
}

NUMERIC = {"n", "size_bytes", "delay_s", "trial", "seed", "time_s", "time_after_last_arrival_s",
           "speedup_vs_ring", "speedup_vs_baseline", "algbw_GBps", "busbw_GBps", "hidden_delay_fraction", "straggler",
           "straggler_moved", "transfers",
           "num_stragglers", "persistence", "oversubscription", "mean_s", "p50_s", "p99_s",
           # summary.csv and timing.csv
           "point", "trials", "mean_delay_s", "mean_time_s", "p50_time_s", "p99_time_s", "min_time_s",
           "max_time_s", "mean_time_after_last_arrival_s", "p99_time_after_last_arrival_s",
           "mean_speedup_vs_ring", "speedup_of_mean_vs_ring", "mean_speedup_vs_baseline",
           "speedup_of_mean_vs_baseline", "rank_by_mean", "wall_s", "generate_s",
           "transfers_per_s", "peak_rss_bytes"}

# Display names (presentation only; algorithms not listed keep their registry name).
LABEL = {
    "stragglar": "StragglAR",
    "stragglar_online": "StragglAR online",
    "ring": "Ring",
    "recursive_halving_doubling": "Recursive halving/doubling",
    "recursive_halving_doubling_fold": "Recursive halving/doubling (MPICH fold)",
    "recursive_doubling": "Recursive doubling",
    "binomial_tree": "Binomial tree",
    "double_binary_tree": "Double binary tree",
    "direct": "Direct (broadcast)",
    "straggler_tree": "Straggler tree",
    "hierarchical": "Hierarchical (ring per rail)",
    "hierarchical_rhd": "Hierarchical (RHD per rail)",
    "ring_multichannel": "NCCL multi-channel ring",
    "nccl_tree": "NCCL tree (chains + double binary tree)",
    "stragglar_cluster": "StragglAR-cluster",
    "nvls": "NVLS (switch reduction)",
    "nvls_tree": "NCCL NVLS + tree",
    "nccl": "NCCL's choice",
}


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
    for row in rows:
        if row.get("algorithm"):
            _csv_algorithm_order.setdefault(row["algorithm"], len(_csv_algorithm_order))
    return rows


# Algorithms in the order the results files list them (a study lists them in its spec's order,
# which for `algorithms: all` is the table's): the legend order when the table is not available.
_csv_algorithm_order = {}
_table = []


def algorithm_table():
    """The algorithm table as `collsim algorithms --json` prints it (a list of dicts with name,
    summary, reference, role, straggler_aware, ...), or None when the plot is not given the
    collsim binary. Plots never guess where the binary is: it comes from the COLLSIM_BIN
    environment variable, which collsim sets to itself when the caller has not (so the plot
    scripts that `collsim run` starts inherit it). A binary that fails is an error, not a silent fallback."""
    if _table:
        return _table[0]
    binary = os.environ.get("COLLSIM_BIN")
    table = None
    if binary:
        import json
        import subprocess

        try:
            text = subprocess.run([binary, "algorithms", "--json"], check=True, capture_output=True,
                                  text=True, timeout=60).stdout
            table = json.loads(text)
        except (OSError, subprocess.SubprocessError, ValueError) as error:
            sys.exit(f"plot: COLLSIM_BIN={binary}: `algorithms --json` failed: {error}")
    _table.append(table)
    return table


def style(algorithm):
    return STYLE.get(algorithm, ("#333333", "."))


def label(algorithm):
    """Display name of an algorithm (registry name when unknown)."""
    return LABEL.get(algorithm, algorithm)


def ordered(algorithms):
    """Algorithms in the legend order shared by every plot: the algorithm table's order when the
    plot is given the binary (algorithm_table()), else the order of the results files read so
    far; anything else last, sorted."""
    algorithms = set(algorithms)
    table = algorithm_table()
    if table is not None:
        position = {row["name"]: i for i, row in enumerate(table)}
    else:
        position = _csv_algorithm_order
    known = sorted((a for a in algorithms if a in position), key=position.get)
    return known + sorted(algorithms - set(known))


def study_args(stem, description):
    """Command line of a study plot: RESULTS_DIR [--out DIR]. Returns (results_dir, out_dir)."""
    import argparse

    parser = argparse.ArgumentParser(prog=f"{stem}.py", description=description)
    parser.add_argument("results_dir", help="directory written by `collsim run` (holds results.csv)")
    parser.add_argument("--out", help="where to write the PNG and SVG (default: results_dir)")
    args = parser.parse_args()
    return args.results_dir, args.out or args.results_dir


def multi_study_rows(stem, description, require):
    """Command line RESULTS_DIR [RESULTS_DIR ...] [--out DIR] of a plot that merges several studies,
    and their results.csv rows at the largest buffer size (said when there are several). Returns
    (rows, size_bytes, out_dir); out_dir defaults to the first RESULTS_DIR."""
    import argparse

    parser = argparse.ArgumentParser(prog=f"{stem}.py", description=description)
    parser.add_argument("results_dirs", nargs="+", help="directories written by `collsim run` (hold results.csv)")
    parser.add_argument("--out", help="where to write the PNGs and SVGs (default: the first results directory)")
    args = parser.parse_args()
    rows = []
    for results_dir in args.results_dirs:
        rows += read_results(results_dir, require=require)
    sizes = sorted({r["size_bytes"] for r in rows})
    if len(sizes) > 1:
        print(f"{stem}: several sizes in the results; plotting {human_size(sizes[-1])}")
    return [r for r in rows if r["size_bytes"] == sizes[-1]], sizes[-1], args.out or args.results_dirs[0]


def read_results(results_dir, name="results.csv", require=()):
    """Rows of results_dir/name; exits with a message when a required column is missing."""
    path = os.path.join(results_dir, name)
    rows = read_rows(path)
    missing = [c for c in require if c not in rows[0]]
    if missing:
        sys.exit(f"plot: {path} lacks column(s) {', '.join(missing)}")
    return rows


def resolved_value(results_dir, key):
    """A top-level or link scalar (e.g. 'alpha', 'bandwidth') from config.resolved.yaml as float
    in base units, or None when the file or key is absent. The file writes base units with their
    suffix ('3e-06s', '483183820800Bps'); float() alone refused those, and the paper formula was
    never drawn. A line scan: PyYAML is not a dependency."""
    path = os.path.join(results_dir, "config.resolved.yaml")
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        for line in handle:
            text = line.split("#", 1)[0].strip()
            if text.startswith(key + ":"):
                value = text.split(":", 1)[1].strip().strip("'\"")
                for unit in ("Bps", "B", "s"):  # base units only: the file writes nothing else
                    if value.endswith(unit):
                        value = value[: -len(unit)]
                        break
                try:
                    return float(value)
                except ValueError:
                    return None
    return None


def group(rows, *keys):
    """{tuple of key values: [rows]} in first-seen order."""
    groups = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    return groups


def mean(values):
    values = list(values)
    return sum(values) / len(values)


def percentile(values, p):
    """Nearest-rank percentile, the definition summary.csv uses."""
    import math

    ordered_values = sorted(values)
    rank = math.ceil(p / 100.0 * len(ordered_values))
    return ordered_values[max(rank, 1) - 1]


def crossing(xs, ys):
    """First x where ys changes sign from > 0 to <= 0, linearly interpolated; None if never.
    Returns xs[0] when ys[0] <= 0 already."""
    points = sorted(zip(xs, ys))
    if not points:
        return None
    if points[0][1] <= 0:
        return points[0][0]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if y0 > 0 >= y1:
            return x0 + (x1 - x0) * y0 / (y0 - y1)
    return None


def log2_axis(ax, values, axis="x"):
    """Log-2 scale with one tick per value, labelled as plain integers."""
    import matplotlib.ticker as ticker

    ticks = sorted(set(values))
    if axis == "x":
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks)
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(ticker.NullLocator())
    else:
        ax.set_yscale("log", base=2)
        ax.set_yticks(ticks)
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_locator(ticker.NullLocator())


def size_axis(ax, sizes, axis="x", every=1):
    """Log-2 scale for buffer sizes with ticks labelled 256 KiB, 1 GiB, ... (every k-th size)."""
    import matplotlib.ticker as ticker

    ticks = sorted(set(sizes))[::every]
    setter = ax.set_xticks if axis == "x" else ax.set_yticks
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=2)
    setter(ticks)
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_formatter(ticker.FuncFormatter(lambda v, _: human_size(v)))
    target.set_minor_locator(ticker.NullLocator())


def figure(rows=1, cols=1, width=6.4, height=4.2, **kwargs):
    """A figure of rows x cols panels of width x height inches each; axes always a 2-D array."""
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, **kwargs)
    return fig, axes


def save(fig, out_dir, stem):
    """Writes stem.png and stem.svg in out_dir and prints their paths.

    The figure's title (suptitle) is also stored as the files' Title metadata: SVG text is drawn
    as paths, so this is where tests and file browsers can read what the figure shows."""
    os.makedirs(out_dir, exist_ok=True)
    suptitle = getattr(fig, "_suptitle", None)
    metadata = {"Title": suptitle.get_text()} if suptitle is not None else {}
    paths = []
    for ext in ("png", "svg"):
        path = os.path.join(out_dir, f"{stem}.{ext}")
        # A pipe or a device under the name would block the write (or swallow it): refuse it.
        if os.path.lexists(path) and not os.path.isfile(path):
            raise SystemExit(f"{path} exists and is not a regular file (a pipe or a device?); remove it or rename it")
        fig.savefig(path, dpi=150, bbox_inches="tight", metadata=metadata)
        paths.append(path)
    plt.close(fig)
    print("wrote " + " and ".join(paths))


_TOPOLOGY_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "configs", "topologies")


def oversubscription(topology):
    """Leaf/spine ratio of a topology label: from configs/topologies/<label>.yaml, else from a
    '<k>to1' suffix in the name, else 1 (non-blocking). A line scan: PyYAML is not a dependency."""
    import re

    path = os.path.join(_TOPOLOGY_DIR, topology + ".yaml")
    if os.path.exists(path):
        with open(path) as handle:
            for line in handle:
                text = line.split("#", 1)[0].strip()
                if text.startswith("oversubscription:"):
                    return float(text.split(":", 1)[1])
        return 1.0
    match = re.search(r"(\d+(?:\.\d+)?)to1", topology)
    return float(match.group(1)) if match else 1.0


def human_size(size_bytes):
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size_bytes >= factor:
            return f"{size_bytes / factor:.3g} {unit}"
    return f"{size_bytes:g} B"


def human_time(seconds):
    """'850 us', '5 ms', '1.2 s' for titles and annotations."""
    if seconds == 0:
        return "0"
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= factor:
            return f"{seconds / factor:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
