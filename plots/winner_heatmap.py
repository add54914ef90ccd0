#!/usr/bin/python3
"""Study 7: which algorithm wins, by straggler delay and buffer size, one panel per (topology, n).

Reads RESULTS_DIR/summary.csv of configs/experiments/winner_heatmap.yaml (or a smaller variant)
and writes winner_heatmap.png/.svg. Each cell is coloured by the algorithm with the lowest mean
completion time (first arrival to last finish) and labelled with its speedup over the runner-up.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collsim_plot as cp  # noqa: E402
import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: winner_heatmap.py RESULTS_DIR")
    out_dir = sys.argv[1]
    rows = cp.read_rows(os.path.join(out_dir, "summary.csv"))
    # ((topology, n), delay, size) -> list of (mean time, algorithm); the winner depends on the
    # fabric, so topologies never share a panel.
    cells = {}
    for row in rows:
        key = ((row["topology"], int(row["n"])), row["mean_delay_s"], row["size_bytes"])
        cells.setdefault(key, []).append((row["mean_time_s"], row["algorithm"]))
    panels = sorted({k[0] for k in cells})
    topologies = sorted({t for t, _ in panels})
    delays = sorted({k[1] for k in cells})
    sizes = sorted({k[2] for k in cells})
    algorithms = cp.ordered({a for v in cells.values() for _, a in v})
    colour_index = {a: i for i, a in enumerate(algorithms)}
    cmap = mcolors.ListedColormap([cp.style(a)[0] for a in algorithms])

    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 5.2), squeeze=False)
    winners_seen = set()
    for ax, (topology, n) in zip(axes[0], panels):
        grid = [[float("nan")] * len(sizes) for _ in delays]
        for i, d in enumerate(delays):
            for j, s in enumerate(sizes):
                entries = sorted(cells.get(((topology, n), d, s), []))
                if not entries:
                    continue
                best_time, best = entries[0]
                winners_seen.add(best)
                grid[i][j] = colour_index[best]
                if len(entries) > 1 and best_time > 0:
                    ax.text(j, i, f"{entries[1][0] / best_time:.2f}", ha="center", va="center", fontsize=7,
                            color="white")
        ax.imshow(grid, cmap=cmap, vmin=-0.5, vmax=len(algorithms) - 0.5, aspect="auto", origin="lower")
        ax.set_xticks(range(len(sizes)), [cp.human_size(s) for s in sizes], rotation=45, ha="right")
        ax.set_yticks(range(len(delays)), [f"{d * 1e3:g}" for d in delays])
        ax.set_xlabel("buffer size per GPU")
        ax.set_ylabel("straggler delay (ms)")
        ax.set_title(f"{topology}, n = {n}: fastest algorithm (label: speedup over runner-up)")
    handles = [Patch(color=cp.style(a)[0], label=cp.label(a)) for a in algorithms if a in winners_seen]
    fig.legend(handles=handles, loc="lower center", ncol=min(4, len(handles)), bbox_to_anchor=(0.5, -0.16))
    fig.suptitle(f"Winner by (delay, buffer size) on {', '.join(topologies)}: mean completion time from the first arrival")
    cp.save(fig, out_dir, "winner_heatmap")


if __name__ == "__main__":
    main()
