#!/usr/bin/python3
"""Study 4: completion time under random delays and an imperfectly persistent straggler.

Reads RESULTS_DIR/results.csv of configs/experiments/delay_distribution.yaml (many trials per
point, one arrival model per persistence value, labelled "persistence=P") and writes
delay_distribution.png/.svg:
  one panel per persistence: the CDF of the completion time of every algorithm over the trials
  (delay included), the mean and p99 of StragglAR and of the best other algorithm in the title;
  last row: mean time after the straggler arrives, and speedup over Ring (ratio of mean
  completion times), against persistence.
"""
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collsim_plot as cp  # noqa: E402


def persistence_of(label):
    match = re.search(r"persistence\s*=?\s*([0-9.]+)", label)
    return float(match.group(1)) if match else None


def main():
    results_dir, out_dir = cp.study_args("delay_distribution", __doc__.splitlines()[0])
    rows = cp.read_results(results_dir, require=("algorithm", "arrival", "time_s", "time_after_last_arrival_s",
                                                 "delay_s", "straggler_moved"))
    ns = sorted({r["n"] for r in rows})
    sizes = sorted({r["size_bytes"] for r in rows})
    topologies = sorted({r["topology"] for r in rows})
    rows = [r for r in rows if r["n"] == ns[0] and r["size_bytes"] == sizes[0]]
    arrivals = list(dict.fromkeys(r["arrival"] for r in rows))
    algorithms = cp.ordered({r["algorithm"] for r in rows})
    by = cp.group(rows, "arrival", "algorithm")

    cols = 3
    panels = len(arrivals)
    cdf_rows = math.ceil(panels / cols)
    fig, axes = cp.figure(cdf_rows + 1, cols, width=5.0, height=3.8)
    summary = []
    lo = min(r["time_s"] for r in rows)
    hi = max(cp.percentile([r["time_s"] for r in rows], 99.9), lo * 2)
    for i, arrival in enumerate(arrivals):
        ax = axes[i // cols][i % cols]
        stats = {}
        for algorithm in algorithms:
            group = by.get((arrival, algorithm))
            if not group:
                continue
            times = sorted(r["time_s"] * 1e3 for r in group)
            stats[algorithm] = (cp.mean(times), cp.percentile(times, 99))
            colour, _ = cp.style(algorithm)
            ys = [(k + 1) / len(times) for k in range(len(times))]
            ax.step(times, ys, where="post", color=colour, linewidth=1.6 if algorithm == "stragglar" else 1.0,
                    label=cp.label(algorithm))
        moved = [r["straggler_moved"] for r in by.get((arrival, algorithms[0]), [])]
        delays = [r["delay_s"] * 1e3 for r in by.get((arrival, algorithms[0]), [])]
        others = {a: s for a, s in stats.items() if a != "stragglar"}
        title = arrival
        line = f"{arrival}: {len(moved)} trials, straggler moved in {100 * cp.mean(moved):.1f} %, " \
               f"mean delay {cp.mean(delays):.2f} ms"
        if "stragglar" in stats and others:
            best = min(others, key=lambda a: others[a][0])
            s_mean, s_p99 = stats["stragglar"]
            b_mean, b_p99 = others[best]
            title += (f"\nStragglAR mean {s_mean:.2f} / p99 {s_p99:.1f} ms;"
                      f"\nbest other ({cp.label(best)}) {b_mean:.2f} / {b_p99:.1f} ms")
            line += (f"; StragglAR mean {s_mean:.2f} ms p99 {s_p99:.2f} ms; best other {best} mean {b_mean:.2f} ms "
                     f"p99 {b_p99:.2f} ms; mean speedup {b_mean / s_mean:.3f}x")
        summary.append(line)
        ax.set_title(title, fontsize=8.5)
        ax.set_xscale("log")
        ax.set_xlim(lo * 1e3 * 0.9, hi * 1e3)
        ax.set_ylim(0, 1.01)
        ax.set_xlabel("completion time incl. delay (ms, log scale)")
        ax.set_ylabel("fraction of trials (CDF)")
        ax.grid(True, which="both", alpha=0.25)
        import matplotlib.ticker as ticker
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(ticker.FuncFormatter(
            lambda v, _: f"{v:g}" if f"{v:g}"[0] in "25" else ""))
    for j in range(panels, cdf_rows * cols):
        axes[j // cols][j % cols].axis("off")
    handles, labels = axes[0][0].get_legend_handles_labels()
    spare = [axes[j // cols][j % cols] for j in range(panels, cdf_rows * cols)]
    (spare[0] if spare else axes[0][0]).legend(handles, labels, loc="center", fontsize=9,
                                                title="algorithm", frameon=False)

    # Last row: against persistence (the time after arrival removes the delay draws' noise, which
    # differ between arrival models).
    points = sorted((persistence_of(a), a) for a in arrivals if persistence_of(a) is not None)
    ax_after, ax_speed, ax_note = axes[cdf_rows]
    if points:
        xs = [p for p, _ in points]
        for algorithm in algorithms:
            colour, marker = cp.style(algorithm)
            after = [cp.mean(r["time_after_last_arrival_s"] * 1e3 for r in by[(a, algorithm)]) for _, a in points]
            ax_after.plot(xs, after, color=colour, marker=marker, markersize=5, label=cp.label(algorithm))
            ring = [cp.mean(r["time_s"] for r in by[(a, "ring")]) for _, a in points]
            mine = [cp.mean(r["time_s"] for r in by[(a, algorithm)]) for _, a in points]
            ax_speed.plot(xs, [r / m for r, m in zip(ring, mine)], color=colour, marker=marker, markersize=5)
        for ax in (ax_after, ax_speed):
            ax.set_xlabel("straggler persistence (probability the late rank is rank n-1)")
            ax.set_xticks(xs)
            ax.grid(True, alpha=0.3)
        ax_after.set_ylabel("mean time after straggler arrives (ms)")
        ax_after.set_title("mean time after the last arrival", fontsize=9)
        ax_speed.axhline(1.0, color="#999999", linewidth=0.8)
        ax_speed.set_ylabel("speedup over Ring (ratio of mean times)")
        ax_speed.set_title("speedup over Ring, mean completion time", fontsize=9)
    else:
        ax_after.axis("off")
        ax_speed.axis("off")
    ax_note.axis("off")
    ax_note.text(0.0, 0.5, "Schedules are built once for rank n-1 (persistence_mode anchored).\n"
                 "When another rank is late, StragglAR's phase 1 among the\n\"ready\" ranks waits for it, "
                 "so it pays delay + ReduceScatter.\nDelays differ between panels (independent draws per\n"
                 "arrival model); within a panel every algorithm sees the\nsame arrivals in each trial.",
                 fontsize=8.5, va="center")
    fig.suptitle(f"Random straggler delays: n = {ns[0]:g}, {cp.human_size(sizes[0])} per GPU, "
                 f"topology {', '.join(topologies)}", fontsize=11)
    fig.tight_layout()
    cp.save(fig, out_dir, "delay_distribution")
    for line in summary:
        print("  " + line)


if __name__ == "__main__":
    main()
