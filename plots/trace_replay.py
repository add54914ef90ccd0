#!/usr/bin/python3
"""Trace replay: per-iteration time after the last arrival, by algorithm.

Reads RESULTS_DIR/results.csv of configs/experiments/trace_replay.yaml (one arrival model per
trace, trial t = iteration t of the trace) and writes trace_replay.png/.svg: one panel per
(trace, buffer size), the time after the last arrival of every trial for each algorithm, with
the mean of each algorithm in the legend. Iterations in which the last rank was not the one
StragglAR's schedule was built for (straggler_moved) are marked on the StragglAR line.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collsim_plot as cp  # noqa: E402


def main():
    results_dir, out_dir = cp.study_args("trace_replay", __doc__.splitlines()[0])
    rows = cp.read_results(results_dir, require=("algorithm", "arrival", "size_bytes", "trial",
                                                 "time_after_last_arrival_s", "straggler_moved"))
    panels = cp.group(rows, "arrival", "size_bytes")
    fig, axes = cp.figure(len(panels), 1, width=8.0, height=3.6)
    for ax, ((arrival, size), panel) in zip(axes[:, 0], panels.items()):
        by_algorithm = cp.group(panel, "algorithm")
        for algorithm in cp.ordered(a for (a,) in by_algorithm):
            trials = sorted(by_algorithm[(algorithm,)], key=lambda r: r["trial"])
            xs = [r["trial"] for r in trials]
            ys = [r["time_after_last_arrival_s"] * 1e3 for r in trials]
            colour, marker = cp.style(algorithm)
            ax.plot(xs, ys, color=colour, linewidth=1.0,
                    label=f"{cp.label(algorithm)} (mean {cp.human_time(cp.mean(ys) * 1e-3)})")
            moved = [(x, y) for x, y, r in zip(xs, ys, trials) if r["straggler_moved"]]
            if algorithm == "stragglar" and moved:
                ax.scatter([x for x, _ in moved], [y for _, y in moved], color=colour, marker=marker, s=10,
                           label="stragglar, late rank moved")
        ax.set_title(f"{arrival}, {cp.human_size(size)} per rank")
        ax.set_xlabel("iteration (trial)")
        ax.set_ylabel("time after last arrival (ms)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small", ncol=2, loc="upper right")
    fig.tight_layout()
    cp.save(fig, out_dir, "trace_replay")


if __name__ == "__main__":
    main()
