#!/usr/bin/python3
"""Study 6 at scale: which AllReduce wins on a GPU cluster when one GPU is late.

Reads results.csv from one or more result directories of configs/experiments/cluster_scale*.yaml
(any n, any fabrics, fixed straggler delays and/or delay distributions) and writes two figures:

* cluster_scale.png/.svg: one panel per (fabric, n), completion time (delay included) against
  the straggler's delay, one line per algorithm; a distribution's mean appears as a hollow marker
  at its mean delay.
* cluster_scale_winners.png/.svg: the winner map. One row per (n, fabric), one column per delay
  (then one per distribution); each cell is coloured by the fastest algorithm and says by how
  much it beats the runner-up (runner-up time / winner time).

    /usr/bin/python3 plots/cluster_scale.py RESULTS_DIR [RESULTS_DIR ...] [--out DIR]

DIR defaults to the first RESULTS_DIR.
"""
import os
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collsim_plot as cp  # noqa: E402

FIXED = "fixed_delay"  # the arrival label `collsim run` gives to points of the `delays` axis


def column_key(arrival, delay):
    """Winner-map column of a point: fixed delays in delay order, then distributions by label."""
    return (0, delay, "") if arrival == FIXED else (1, 0.0, arrival)


def column_label(key):
    kind, delay, arrival = key
    return f"delay {cp.human_time(delay)}" if kind == 0 else arrival


def main():
    rows, size_bytes, out_dir = cp.multi_study_rows("cluster_scale", __doc__.splitlines()[0],
                                    require=("algorithm", "n", "size_bytes", "topology", "arrival", "delay_s", "time_s"))

    # (n, ratio, arrival) -> {algorithm: (mean delay, mean time)}; a fixed delay is its own arrival.
    points = {}
    for (n, topology, arrival, algorithm), group in cp.group(rows, "n", "topology", "arrival", "algorithm").items():
        ratio = cp.oversubscription(topology)
        if arrival == FIXED:
            for (delay,), same in cp.group(group, "delay_s").items():
                points.setdefault((n, ratio, column_key(arrival, delay)), {})[algorithm] = (
                    delay, cp.mean(r["time_s"] for r in same))
        else:
            points.setdefault((n, ratio, column_key(arrival, 0.0)), {})[algorithm] = (
                cp.mean(r["delay_s"] for r in group), cp.mean(r["time_s"] for r in group))
    algorithms = cp.ordered({a for series in points.values() for a in series})
    ns = sorted({n for n, _, _ in points})
    ratios = sorted({ratio for _, ratio, _ in points})

    # Figure 1: time against delay, one panel per (fabric, n).
    fig, axes = cp.figure(len(ratios), len(ns), width=4.6, height=3.8)
    for i, ratio in enumerate(ratios):
        for j, n in enumerate(ns):
            ax = axes[i][j]
            keys = sorted(k for m, r, k in points if m == n and r == ratio)
            if not keys:
                ax.axis("off")
                ax.text(0.5, 0.5, f"n = {n:g}, {ratio:g}:1\nnot run", ha="center", va="center", fontsize=9,
                        color="#555555", transform=ax.transAxes)
                continue
            for algorithm in algorithms:
                colour, marker = cp.style(algorithm)
                fixed = [points[(n, ratio, k)][algorithm] for k in keys
                         if k[0] == 0 and algorithm in points[(n, ratio, k)]]
                if fixed:
                    ax.plot([d * 1e3 for d, _ in fixed], [t * 1e3 for _, t in fixed], color=colour, marker=marker,
                            markersize=4, linewidth=1.2, label=cp.label(algorithm))
                for k in keys:
                    if k[0] == 1 and algorithm in points[(n, ratio, k)]:
                        d, t = points[(n, ratio, k)][algorithm]
                        ax.plot([d * 1e3], [t * 1e3], color=colour, marker=marker, fillstyle="none",
                                markersize=7, linestyle="none")
            distributions = [k[2] for k in keys if k[0] == 1]
            ax.set_title(f"n = {n:g}, leaf/spine {ratio:g}:1"
                         + (f"\nhollow: {', '.join(distributions)} (mean)" if distributions else ""), fontsize=9)
            ax.set_xlabel("straggler delay (ms)")
            ax.set_ylabel("completion time incl. delay (ms)")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
    handles, labels = [], []
    for row in axes:
        for ax in row:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
    fig.legend(handles, labels, fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle(f"AllReduce on DGX H100 clusters, {cp.human_size(size_bytes)} per GPU, one straggler "
                 f"(rank n-1): time against delay", fontsize=10)
    fig.tight_layout()
    cp.save(fig, out_dir, "cluster_scale")

    # Figure 2: the winner map.
    row_keys = [(n, ratio) for n in ns for ratio in ratios if any(m == n and r == ratio for m, r, _ in points)]
    col_keys = sorted({k for _, _, k in points})
    fig, axes = cp.figure(1, 1, width=max(6.0, 1.7 * len(col_keys)), height=0.75 * len(row_keys) + 1.6)
    ax = axes[0][0]
    summary = []
    for i, (n, ratio) in enumerate(row_keys):
        for j, key in enumerate(col_keys):
            series = points.get((n, ratio, key))
            if not series:
                ax.text(j, i, "not run", ha="center", va="center", fontsize=7, color="#777777")
                continue
            ranked = sorted(series.items(), key=lambda item: item[1][1])
            winner, (_, best) = ranked[0]
            margin = ranked[1][1][1] / best if len(ranked) > 1 else float("nan")
            colour, _ = cp.style(winner)
            ax.add_patch(cp.plt.Rectangle((j - 0.5, i - 0.5), 1, 1, color=colour, alpha=0.55))
            runner_up = cp.label(ranked[1][0]) if len(ranked) > 1 else "-"
            ax.text(j, i, f"{textwrap.fill(cp.label(winner), 18)}\n{cp.human_time(best)}, {margin:.2f}x", ha="center",
                    va="center", fontsize=6.5)
            summary.append(f"n = {n:g} {ratio:g}:1 {column_label(key)}: fastest {cp.label(winner)} "
                           f"{cp.human_time(best)}, {margin:.3f}x ahead of {runner_up}")
    ax.set_xlim(-0.5, len(col_keys) - 0.5)
    ax.set_ylim(len(row_keys) - 0.5, -0.5)
    ax.set_xticks(range(len(col_keys)))
    ax.set_xticklabels([column_label(k) for k in col_keys], fontsize=8)
    ax.set_yticks(range(len(row_keys)))
    ax.set_yticklabels([f"n = {n:g}, {ratio:g}:1" for n, ratio in row_keys], fontsize=8)
    fig.suptitle(f"Fastest AllReduce by GPU count, fabric and straggler delay ({cp.human_size(size_bytes)} per GPU); "
                 "cell: winner, its time, and its lead over the runner-up", fontsize=9)
    fig.tight_layout()
    cp.save(fig, out_dir, "cluster_scale_winners")
    for line in summary:
        print("  " + line)


if __name__ == "__main__":
    main()
