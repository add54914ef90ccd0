#!/usr/bin/python3
"""Study 2: completion time and speedup against the straggler's delay, critical delay marked.

Reads RESULTS_DIR/results.csv of configs/experiments/dgx_h100_delay_sweep.yaml (one n, one size,
constant delays, start barrier and/or eager) and writes delay_sweep.png/.svg.

Left: completion time (first arrival to last finish, delay included) per algorithm. Right: speedup
over Ring, plus StragglAR's speedup over the best other algorithm at each delay. The critical
delay is where StragglAR becomes faster than the best other algorithm, linearly interpolated
between the swept delays (one vertical line per start mode).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collsim_plot as cp  # noqa: E402

START_STYLE = {"barrier": ("-", "full"), "eager": ("--", "none")}


def main():
    results_dir, out_dir = cp.study_args("delay_sweep", __doc__.splitlines()[0])
    rows = cp.read_results(results_dir, require=("algorithm", "n", "size_bytes", "start", "delay_s", "time_s"))
    ns = sorted({r["n"] for r in rows})
    sizes = sorted({r["size_bytes"] for r in rows})
    topologies = sorted({r["topology"] for r in rows})
    engines = sorted({r["engine"] for r in rows})
    if len(ns) > 1 or len(sizes) > 1:
        print(f"delay_sweep: several n/sizes in the results; plotting n = {ns[0]:g}, {cp.human_size(sizes[0])}")
    rows = [r for r in rows if r["n"] == ns[0] and r["size_bytes"] == sizes[0] and r["engine"] == engines[0]]

    # (start, algorithm) -> [(delay, mean time)]
    curves = {}
    for (start, algorithm, delay), group in cp.group(rows, "start", "algorithm", "delay_s").items():
        curves.setdefault((start, algorithm), []).append((delay, cp.mean(r["time_s"] for r in group)))
    for points in curves.values():
        points.sort()
    starts = [s for s in ("barrier", "eager") if any(k[0] == s for k in curves)]
    algorithms = cp.ordered({a for (_, a) in curves})

    fig, axes = cp.figure(1, 2, width=6.6, height=5.0)
    ax_time, ax_speedup = axes[0]
    for start in starts:
        line, fill = START_STYLE.get(start, (":", "full"))
        ring = dict(curves.get((start, "ring"), []))
        for algorithm in algorithms:
            points = curves.get((start, algorithm))
            if not points:
                continue
            colour, marker = cp.style(algorithm)
            delays_ms = [d * 1e3 for d, _ in points]
            ax_time.plot(delays_ms, [t * 1e3 for _, t in points], linestyle=line, marker=marker, fillstyle=fill,
                         color=colour, markersize=4)
            if ring:
                ax_speedup.plot(delays_ms, [ring[d] / t for d, t in points], linestyle=line, marker=marker,
                                fillstyle=fill, color=colour, markersize=4)

    summary = []
    same = len(starts) == 2 and all(
        len(curves.get(("barrier", a), [])) == len(curves.get(("eager", a), [])) and all(
            abs(tb - te) <= 1e-9 * max(tb, te) for (_, tb), (_, te) in zip(curves[("barrier", a)], curves[("eager", a)]))
        for a in algorithms)
    marked = []
    for start in (starts[:1] if same else starts):
        line, fill = START_STYLE.get(start, (":", "full"))
        sar = dict(curves.get((start, "stragglar"), []))
        # The critical delay is StragglAR against the baselines: the other studied rows
        # (stragglar_online is StragglAR plus an agreement) would only measure that agreement.
        # Without the table (no COLLSIM_BIN) every other algorithm counts, as before.
        table = cp.algorithm_table()
        studied = {row["name"] for row in table if row.get("role") == "studied"} if table else {"stragglar"}
        others = [a for a in algorithms if a not in studied]
        if not sar or not others:
            continue
        delays = sorted(sar)
        best_other = [min(dict(curves[(start, a)])[d] for a in others if (start, a) in curves) for d in delays]
        ax_speedup.plot([d * 1e3 for d in delays], [b / sar[d] for d, b in zip(delays, best_other)],
                        linestyle=line, color="black", linewidth=2.2, fillstyle=fill,
                        label=f"StragglAR vs best other ({'barrier = eager' if same else start})")
        critical = cp.crossing(delays, [sar[d] - b for d, b in zip(delays, best_other)])
        if critical is None:
            summary.append(f"{start}: StragglAR never beats the best other algorithm up to {cp.human_time(delays[-1])}")
            continue
        modes = "barrier and eager start" if same else f"{start} start"
        summary.append(f"critical delay {cp.human_time(critical)} ({modes}; StragglAR vs best other "
                       f"{best_other[-1] / sar[delays[-1]]:.2f}x at {cp.human_time(delays[-1])})")
        if any(abs(critical - c) <= 0.01 * c for c in marked):
            continue  # same line as the other start mode's
        for ax in (ax_time, ax_speedup):
            ax.axvline(critical * 1e3, color="black", linestyle=line, linewidth=0.9, alpha=0.7)
        ax_time.annotate(f"critical delay\n{critical * 1e3:.2f} ms", xy=(critical * 1e3, 0.97 - 0.08 * len(marked)),
                         xycoords=("data", "axes fraction"), xytext=(6, 0), textcoords="offset points",
                         va="top", fontsize=8)
        marked.append(critical)

    ax_time.set_xlabel("straggler delay (ms)")
    ax_time.set_ylabel("completion time, first arrival to last finish (ms)")
    ax_time.set_title("(a) completion time (delay included)", fontsize=10)
    ax_time.grid(True, alpha=0.3)
    ax_time.set_ylim(bottom=0)
    ax_time.set_xlim(left=0)
    ax_speedup.axhline(1.0, color="#999999", linewidth=0.8)
    ax_speedup.set_xlabel("straggler delay (ms)")
    ax_speedup.set_ylabel("speedup over Ring (ring time / time)")
    ax_speedup.set_title("(b) speedup over Ring; black: StragglAR vs best other", fontsize=10)
    ax_speedup.grid(True, alpha=0.3)
    ax_speedup.set_xlim(left=0)
    ax_speedup.legend(fontsize=8, loc="lower right")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=cp.style(a)[0], marker=cp.style(a)[1], markersize=5, label=cp.label(a))
               for a in algorithms]
    handles += [Line2D([], [], color="#444444", linestyle=START_STYLE.get(s, (":", "full"))[0], marker="o",
                       fillstyle=START_STYLE.get(s, (":", "full"))[1], markersize=5, label=f"{s} start")
                for s in starts]
    ax_time.legend(handles=handles, fontsize=8, loc="lower right")
    setting = f"n = {ns[0]:g}, {cp.human_size(sizes[0])} per GPU, topology {', '.join(topologies)}, engine {engines[0]}"
    note = ""
    if same:
        note = "\neager start gives the same times as barrier for every algorithm (dashed curves lie on the solid ones)"
    elif len(starts) == 2:
        note = "\nsolid: barrier start, dashed/hollow: eager start"
    fig.suptitle(f"Straggler delay sweep: {setting}\n{'; '.join(summary)}{note}", fontsize=10)
    fig.tight_layout()
    cp.save(fig, out_dir, "delay_sweep")
    for line in summary:
        print("  " + line)


if __name__ == "__main__":
    main()
