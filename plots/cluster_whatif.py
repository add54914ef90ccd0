#!/usr/bin/python3
"""Study 6: StragglAR on a GPU cluster, non-blocking (1:1) vs oversubscribed (2:1) leaf/spine.

Reads results.csv from one or more result directories of configs/experiments/cluster_whatif*.yaml
(n = 1,024 and/or 4,096, constant straggler delays; the 1:1 points come from the replay engine,
the 2:1 points from SimGrid) and writes cluster_whatif.png/.svg: one row per n; per fabric a
panel of completion time (delay included) against the straggler's delay for every algorithm,
side by side, and a last panel with the speedup over Ring (solid 1:1, dashed 2:1).

    /usr/bin/python3 plots/cluster_whatif.py RESULTS_DIR [RESULTS_DIR ...] [--out DIR]

DIR defaults to the first RESULTS_DIR.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collsim_plot as cp  # noqa: E402

FABRIC_LINE = {1.0: "-", 2.0: "--"}


def main():
    rows, size_bytes, out_dir = cp.multi_study_rows("cluster_whatif", __doc__.splitlines()[0],
                                    require=("algorithm", "n", "size_bytes", "topology", "engine", "delay_s", "time_s"))
    for r in rows:
        r["ratio"] = cp.oversubscription(r["topology"])

    # (n, topology, algorithm) -> {delay: mean time}; engine and ratio per (n, topology)
    curves = {}
    fabric = {}
    for (n, topology, algorithm, delay), group in cp.group(rows, "n", "topology", "algorithm", "delay_s").items():
        curves.setdefault((n, topology, algorithm), {})[delay] = cp.mean(r["time_s"] for r in group)
        fabric[(n, topology)] = (group[0]["ratio"], group[0]["engine"])
    ns = sorted({n for n, _ in fabric})
    algorithms = cp.ordered({a for (_, _, a) in curves})
    columns = max(len([t for m, t in fabric if m == n]) for n in ns) + 1

    fig, axes = cp.figure(len(ns), columns, width=5.0, height=4.2)
    summary = []
    for i, n in enumerate(ns):
        topologies = sorted((t for m, t in fabric if m == n), key=lambda t: (fabric[(n, t)][0], t))
        ax_speedup = axes[i][columns - 1]
        top = max(t for (m, topo, _), series in curves.items() if m == n for t in series.values())
        for j, topology in enumerate(topologies):
            ratio, engine = fabric[(n, topology)]
            ax = axes[i][j]
            ring = curves.get((n, topology, "ring"), {})
            for algorithm in algorithms:
                series = curves.get((n, topology, algorithm))
                if not series:
                    continue
                colour, marker = cp.style(algorithm)
                delays = sorted(series)
                ax.plot([d * 1e3 for d in delays], [series[d] * 1e3 for d in delays], color=colour, marker=marker,
                        linewidth=2.0 if algorithm == "stragglar" else 1.2, label=cp.label(algorithm))
                if algorithm != "ring" and ring:
                    shared = [d for d in delays if d in ring]
                    ax_speedup.plot([d * 1e3 for d in shared], [ring[d] / series[d] for d in shared], color=colour,
                                    marker=marker, linestyle=FABRIC_LINE.get(ratio, ":"),
                                    fillstyle="full" if ratio <= 1 else "none",
                                    label=f"{cp.label(algorithm)}, {ratio:g}:1")
            ax.set_title(f"n = {n:g}, {topology}\nleaf/spine {ratio:g}:1, engine {engine}", fontsize=9)
            ax.set_xlabel("straggler delay (ms)")
            ax.set_ylabel("completion time incl. delay (ms)")
            ax.set_ylim(0, top * 1e3 * 1.08)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8, loc="lower right")
            for delay in sorted({d for a in algorithms for d in curves.get((n, topology, a), {})}):
                times = {a: curves[(n, topology, a)][delay] for a in algorithms
                         if delay in curves.get((n, topology, a), {})}
                winner = min(times, key=times.get)
                line = (f"n = {n:g} {topology} ({ratio:g}:1, {engine}) delay {cp.human_time(delay)}: "
                        + ", ".join(f"{cp.label(a)} {cp.human_time(t)}" for a, t in times.items())
                        + f"; fastest {cp.label(winner)}")
                if "stragglar" in times and "ring" in times:
                    line += f"; StragglAR vs Ring {times['ring'] / times['stragglar']:.3f}x"
                summary.append(line)
        for j in range(len(topologies), columns - 1):
            # Another fabric was run at a different n: say what is missing rather than leave a hole.
            axes[i][j].axis("off")
            axes[i][j].text(0.5, 0.5, f"n = {n:g}: no results for a second fabric\n(pass its result directory too)",
                            ha="center", va="center", fontsize=9, color="#555555", transform=axes[i][j].transAxes)
        ax_speedup.axhline(1.0, color="#1f77b4", linewidth=1, linestyle=":")
        ax_speedup.set_title(f"n = {n:g}: speedup over Ring on the same fabric\n(solid 1:1, dashed and hollow 2:1)", fontsize=9)
        ax_speedup.set_xlabel("straggler delay (ms)")
        ax_speedup.set_ylabel("speedup over Ring (Ring time / time)")
        ax_speedup.grid(True, alpha=0.3)
        ax_speedup.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.suptitle(f"Cluster what-if: {cp.human_size(size_bytes)} per GPU, one straggler (rank n-1), "
                 f"{', '.join(sorted({r['start'] for r in rows}))} start", fontsize=10)
    fig.tight_layout()
    cp.save(fig, out_dir, "cluster_whatif")
    for line in summary:
        print("  " + line)


if __name__ == "__main__":
    main()
