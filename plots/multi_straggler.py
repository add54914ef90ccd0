#!/usr/bin/python3
"""Study 5: completion time with k = 1..4 late ranks.

Reads RESULTS_DIR/results.csv of configs/experiments/multi_straggler.yaml, whose arrival models
are labelled "k<K>_<pattern>" (e.g. k2_equal, k3_staggered; a plain "k<K>" such as k1, one late
rank, belongs to every pattern), and writes multi_straggler.png/.svg:
one row per delay pattern, one column per n; completion time (delay included) against k for
every algorithm, and StragglAR's speedup over the best other algorithm in each panel's title.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collsim_plot as cp  # noqa: E402

PATTERN_NOTE = {"equal": "every straggler equally late", "staggered": "later stragglers less late"}


def parse_label(label):
    match = re.fullmatch(r"k(\d+)(?:_(\w+))?", label)
    if not match:
        return None
    return int(match.group(1)), match.group(2)  # pattern None: shared by every pattern


def main():
    results_dir, out_dir = cp.study_args("multi_straggler", __doc__.splitlines()[0])
    rows = cp.read_results(results_dir, require=("algorithm", "n", "arrival", "time_s", "delay_s"))
    unknown = sorted({r["arrival"] for r in rows if parse_label(r["arrival"]) is None})
    if unknown:
        print(f"multi_straggler: ignoring arrival labels not of the form k<K>_<pattern>: {', '.join(unknown)}")
    rows = [r for r in rows if parse_label(r["arrival"]) is not None]
    if not rows:
        sys.exit("multi_straggler: no arrival labelled k<K>_<pattern> in the results")
    for r in rows:
        r["k"], r["pattern"] = parse_label(r["arrival"])
    patterns = list(dict.fromkeys(r["pattern"] for r in rows if r["pattern"] is not None)) or ["all"]
    # One straggler is the same arrival in every pattern: the spec lists it once (a value listed
    # twice in a sweep axis is an error), the plot shows it in each pattern's row.
    rows = [r for r in rows if r["pattern"] is not None] + [
        dict(r, pattern=p) for r in rows if r["pattern"] is None for p in patterns]
    ns = sorted({r["n"] for r in rows})
    sizes = sorted({r["size_bytes"] for r in rows})
    topologies = sorted({r["topology"] for r in rows})
    starts = sorted({r["start"] for r in rows})
    algorithms = cp.ordered({r["algorithm"] for r in rows})
    # (n, pattern, algorithm) -> {k: mean time}
    data = {}
    delays = {}
    for (n, pattern, algorithm, k), group in cp.group(rows, "n", "pattern", "algorithm", "k").items():
        data.setdefault((n, pattern, algorithm), {})[k] = cp.mean(r["time_s"] for r in group)
        delays[(n, pattern, k)] = cp.mean(r["delay_s"] for r in group)

    fig, axes = cp.figure(len(patterns), len(ns), width=6.0, height=4.3)
    summary = []
    for i, pattern in enumerate(patterns):
        for j, n in enumerate(ns):
            ax = axes[i][j]
            ks = sorted({k for a in algorithms for k in data.get((n, pattern, a), {})})
            for algorithm in algorithms:
                series = data.get((n, pattern, algorithm))
                if not series:
                    continue
                colour, marker = cp.style(algorithm)
                xs = sorted(series)
                ax.plot(xs, [series[k] * 1e3 for k in xs], color=colour, marker=marker, markersize=5,
                        linewidth=2.0 if algorithm == "stragglar" else 1.2, label=cp.label(algorithm))
            ax.plot(ks, [delays[(n, pattern, k)] * 1e3 for k in ks], color="black", linestyle=":",
                    linewidth=1, label="latest delay")
            title = f"n = {n:g}, {pattern} ({PATTERN_NOTE.get(pattern, pattern)})"
            sar = data.get((n, pattern, "stragglar"), {})
            parts = []
            for k in ks:
                others = [data[(n, pattern, a)][k] for a in algorithms
                          if a != "stragglar" and k in data.get((n, pattern, a), {})]
                if k in sar and others:
                    parts.append(f"k={k}: {min(others) / sar[k]:.2f}x")
            if parts:
                title += "\nStragglAR vs best other: " + ", ".join(parts)
                summary.append(f"n = {n:g}, {pattern}: StragglAR vs best other " + ", ".join(parts))
            ax.set_title(title, fontsize=9)
            ax.set_xticks(ks)
            ax.set_xlabel("number of late ranks k")
            ax.set_ylabel("completion time incl. delay (ms)")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=5, fontsize=8, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(f"Several stragglers: {cp.human_size(sizes[0])} per GPU, topology {', '.join(topologies)}, "
                 f"{', '.join(starts)} start; schedules built for the first (latest) straggler", fontsize=10)
    fig.tight_layout()
    cp.save(fig, out_dir, "multi_straggler")
    for line in summary:
        print("  " + line)


if __name__ == "__main__":
    main()
