#!/usr/bin/python3
"""Study 3: which algorithm wins at which buffer size, for a fixed straggler delay.

Reads RESULTS_DIR/results.csv of configs/experiments/buffer_sweep.yaml (sizes x n, one delay)
and writes buffer_sweep.png/.svg, one column per n:
  top:    time after the straggler arrives (completion time minus the delay) per algorithm,
  middle: the winner at each size (lowest completion time; split cell when others are within
          0.1 % of its time after the straggler arrives),
  bottom: StragglAR's speedup over recursive halving/doubling, with the crossover size marked
          (log-linear interpolation between the swept sizes).
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collsim_plot as cp  # noqa: E402

RIVAL = "recursive_halving_doubling"
TIE = 1e-3


def main():
    results_dir, out_dir = cp.study_args("buffer_sweep", __doc__.splitlines()[0])
    rows = cp.read_results(results_dir, require=("algorithm", "n", "size_bytes", "delay_s", "time_s",
                                                 "time_after_last_arrival_s"))
    delays = sorted({r["delay_s"] for r in rows})
    if len(delays) > 1:
        print(f"buffer_sweep: several delays in the results; plotting delay {cp.human_time(delays[-1])}")
    rows = [r for r in rows if r["delay_s"] == delays[-1]]
    ns = sorted({r["n"] for r in rows})
    topologies = sorted({r["topology"] for r in rows})
    engines = sorted({r["engine"] for r in rows})
    starts = sorted({r["start"] for r in rows})

    # (n, algorithm) -> {size: (mean time_s, mean time after last arrival)}
    data = {}
    for (n, algorithm, size), group in cp.group(rows, "n", "algorithm", "size_bytes").items():
        data.setdefault((n, algorithm), {})[size] = (cp.mean(r["time_s"] for r in group),
                                                      cp.mean(r["time_after_last_arrival_s"] for r in group))
    algorithms = cp.ordered({a for (_, a) in data})

    fig, axes = cp.figure(3, len(ns), width=6.6, height=2.7,
                          gridspec_kw={"height_ratios": [4.0, 0.45, 2.8]}, sharex="col")
    summary = []
    for col, n in enumerate(ns):
        ax_time, ax_win, ax_speed = axes[0][col], axes[1][col], axes[2][col]
        sizes = sorted({s for (m, _), v in data.items() if m == n for s in v})
        for algorithm in algorithms:
            series = data.get((n, algorithm))
            if not series:
                continue
            colour, marker = cp.style(algorithm)
            xs = sorted(series)
            ax_time.plot(xs, [series[s][1] * 1e3 for s in xs], color=colour, marker=marker, markersize=4,
                         label=cp.label(algorithm))
        ax_time.set_yscale("log")
        ax_time.set_ylabel("time after straggler arrives (ms, log)")
        ax_time.grid(True, which="both", alpha=0.25)
        ax_time.set_title(f"n = {n:g}", fontsize=11)

        # Winner strip: one cell per size, split in two when the runner-up is within TIE.
        winners = []
        for i, size in enumerate(sizes):
            times = sorted((data[(n, a)][size][1], a) for a in algorithms if size in data.get((n, a), {}))
            tied = [a for t, a in times if t <= times[0][0] * (1 + TIE)]
            winners.append((size, tied))
            lo, hi = math.log2(size) - 0.5, math.log2(size) + 0.5
            for j, a in enumerate(tied):
                left = 2 ** (lo + (hi - lo) * j / len(tied))
                right = 2 ** (lo + (hi - lo) * (j + 1) / len(tied))
                ax_win.axvspan(left, right, color=cp.style(a)[0], alpha=0.9, linewidth=0)
        ax_win.set_yticks([])
        ax_win.set_ylabel("winner", rotation=0, ha="right", va="center", fontsize=9)
        ax_win.set_title("winner per size (split cell: tie within 0.1 %)", fontsize=8)

        sar, rival = data.get((n, "stragglar")), data.get((n, RIVAL))
        if sar and rival:
            common = [s for s in sizes if s in sar and s in rival]
            ratio = [rival[s][0] / sar[s][0] for s in common]
            ratio_after = [rival[s][1] / sar[s][1] for s in common]
            ax_speed.plot(common, ratio_after, color=cp.style("stragglar")[0], marker="o", markersize=4,
                          label="time after straggler arrives")
            ax_speed.plot(common, ratio, color="#555555", marker=".", linestyle="--", markersize=4,
                          label="completion time (delay included)")
            ax_speed.axhline(1.0, color="#999999", linewidth=0.8)
            crossing = cp.crossing([math.log2(s) for s in common], [1 - r for r in ratio])
            if crossing is not None and crossing > math.log2(common[0]):
                size_x = 2 ** crossing
                for ax in (ax_time, ax_speed):
                    ax.axvline(size_x, color="black", linestyle=":", linewidth=1)
                ax_speed.annotate(f"crossover\n{cp.human_size(size_x)}", xy=(size_x, 0.05),
                                  xycoords=("data", "axes fraction"), xytext=(4, 0), textcoords="offset points",
                                  ha="left", va="bottom", fontsize=8)
                summary.append(f"n = {n:g}: StragglAR beats {cp.label(RIVAL)} above {cp.human_size(size_x)}, "
                               f"{max(ratio_after):.2f}x at best (after arrival)")
            else:
                summary.append(f"n = {n:g}: no crossover between StragglAR and {cp.label(RIVAL)} in the sweep")
            ax_speed.legend(fontsize=8, loc="upper left")
        ax_speed.set_ylabel("StragglAR speedup over RHD")
        ax_speed.set_xlabel("buffer size per GPU (log scale)")
        ax_speed.grid(True, alpha=0.3)
        cp.size_axis(ax_speed, sizes, every=2)
        summary.append(f"n = {n:g} winners: " + ", ".join(
            f"{cp.human_size(s)} {'='.join(cp.label(a) for a in w)}" for s, w in winners))

    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=4, fontsize=8, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(f"Winner by buffer size, one straggler late by {cp.human_time(delays[-1])}: "
                 f"topology {', '.join(topologies)}, engine {', '.join(engines)}, {', '.join(starts)} start",
                 fontsize=10)
    fig.tight_layout()
    cp.save(fig, out_dir, "buffer_sweep")
    for line in summary:
        print("  " + line)


if __name__ == "__main__":
    main()
