#!/usr/bin/python3
"""Study 1: StragglAR's speedup over Ring against n (the paper's "2x" curve), and over the best other.

Reads RESULTS_DIR/results.csv of configs/experiments/paper_speedup_curve.yaml (or a smaller
variant) and writes paper_speedup_curve.png/.svg.

Ideal case (the largest delay of the study, long enough to hide phase 1): ring's time after the
straggler arrives / StragglAR's time after the straggler arrives, as in the paper.
Worst case (delay 0): ratio of the total times. One line per engine; the paper's formula
    [2(n-1)a + 2(n-1)/n s b] / [R a + R/(n-1) s b],  R = n - 2 + log2 n
is drawn from alpha and bandwidth in config.resolved.yaml as a check (it is not a simulation).
When the study runs other algorithms too, a second pair of curves gives StragglAR's speedup over
the fastest of them at each point (the paper compares with ring only; recursive halving/doubling,
with 2 log2 n latencies instead of 2(n-1), is the stronger baseline on this star).
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collsim_plot as cp  # noqa: E402

ENGINE_STYLE = {"closed_form": ("-", "o", "closed form"), "replay": ("none", "x", "replay engine"),
                "simgrid": ("none", "+", "SimGrid engine")}


def paper_formula(n, size_bytes, alpha_s, bandwidth_Bps):
    rounds = n - 2 + math.log2(n)
    beta = 1.0 / bandwidth_Bps
    ring = 2 * (n - 1) * alpha_s + 2 * (n - 1) / n * size_bytes * beta
    return ring / (rounds * alpha_s + rounds / (n - 1) * size_bytes * beta)


def main():
    results_dir, out_dir = cp.study_args("paper_speedup_curve", __doc__.splitlines()[0])
    rows = cp.read_results(results_dir, require=("algorithm", "n", "engine", "delay_s", "time_s",
                                                 "time_after_last_arrival_s"))
    delays = sorted({r["delay_s"] for r in rows})
    if len(delays) < 2 or delays[0] != 0:
        sys.exit("paper_speedup_curve: the study needs delay 0 (worst case) and a large delay (ideal case)")
    ideal_delay = delays[-1]
    sizes = sorted({r["size_bytes"] for r in rows})
    size = sizes[-1]

    # (engine, delay, n) -> {algorithm: mean time}
    times = {}
    for (engine, delay, n, algorithm), group in cp.group(
            [r for r in rows if r["size_bytes"] == size], "engine", "delay_s", "n", "algorithm").items():
        key = "time_after_last_arrival_s" if delay == ideal_delay else "time_s"
        times.setdefault((engine, delay, n), {})[algorithm] = cp.mean(r[key] for r in group)

    def best_other(t):
        """(time, algorithm) of the fastest algorithm other than StragglAR at one point."""
        others = [(time, a) for a, time in t.items() if a != "stragglar"]
        return min(others) if others else (None, None)

    has_others = any(set(t) - {"stragglar", "ring"} for t in times.values())
    fig, axes = cp.figure(1, 1, width=8.0, height=5.0)
    ax = axes[0][0]
    all_n = sorted({n for (_, _, n) in times})
    engines = [e for e in ("closed_form", "replay", "simgrid") if any(k[0] == e for k in times)]
    for case, delay, colour in (("ideal", ideal_delay, cp.style("stragglar")[0]), ("worst case", 0.0, "#555555")):
        for engine in engines:
            points = sorted((n, t["ring"] / t["stragglar"]) for (e, d, n), t in times.items()
                            if e == engine and d == delay and "ring" in t and "stragglar" in t)
            if not points:
                continue
            line, marker, name = ENGINE_STYLE.get(engine, ("-", ".", engine))
            what = (f"ideal (delay {cp.human_time(delay)} hides phase 1)" if case == "ideal"
                    else "worst case (delay 0)")
            ax.plot([p[0] for p in points], [p[1] for p in points], linestyle=line, marker=marker,
                    color=colour, markersize=7 if marker == "x" else 5, label=f"{what}, {name}")
            if not has_others:
                continue
            points = sorted((n, best_other(t)[0] / t["stragglar"]) for (e, d, n), t in times.items()
                            if e == engine and d == delay and "stragglar" in t and best_other(t)[0])
            ax.plot([p[0] for p in points], [p[1] for p in points], linestyle="--" if line == "-" else line,
                    marker=marker, color=colour, alpha=0.55, markersize=7 if marker == "x" else 5,
                    label=f"{what}, vs best other, {name}")

    alpha = cp.resolved_value(results_dir, "alpha")
    bandwidth = cp.resolved_value(results_dir, "bandwidth")
    if alpha is not None and bandwidth:
        ax.plot(all_n, [paper_formula(n, size, alpha, bandwidth) for n in all_n], linestyle=":",
                color="black", linewidth=1.2, label="paper formula (ideal case)")
        subtitle = f"alpha = {alpha * 1e6:g} us, bandwidth = {bandwidth / 2**30:g} GiB/s"
    else:
        subtitle = "link parameters not found in config.resolved.yaml"
    ax.axhline(2.0, color="#999999", linewidth=0.8, linestyle="--")
    ax.axhline(1.0, color="#999999", linewidth=0.8)
    ax.text(all_n[0], 2.0, " asymptote 2x", va="bottom", ha="left", fontsize=8, color="#666666")
    cp.log2_axis(ax, all_n)
    ax.set_xlabel("number of GPUs n (log scale)")
    ax.set_ylabel("speedup of StragglAR (other's time / StragglAR time)")
    ax.set_ylim(0.0 if has_others else 0.6, 2.1)
    ax.grid(True, alpha=0.3)
    versus = "Ring (the paper's curve) and the best other algorithm" if has_others else "Ring"
    ax.set_title(f"StragglAR vs {versus}, one straggler, {cp.human_size(size)} per GPU, barrier start\n{subtitle}",
                 fontsize=10)
    ax.legend(fontsize=7 if has_others else 8, loc="lower left" if has_others else "center right")
    cp.save(fig, out_dir, "paper_speedup_curve")

    for engine in engines:
        for n in all_n:
            ideal = times.get((engine, ideal_delay, n), {})
            worst = times.get((engine, 0.0, n), {})
            if "stragglar" in ideal and "stragglar" in worst:
                line = (f"  {engine:11s} n={n:5g}: ideal {ideal['ring'] / ideal['stragglar']:.3f}x, "
                        f"worst case {worst['ring'] / worst['stragglar']:.3f}x")
                if has_others:
                    best_ideal, name = best_other(ideal)
                    line += (f"; vs best other ({name}): ideal {best_ideal / ideal['stragglar']:.3f}x, "
                             f"worst case {best_other(worst)[0] / worst['stragglar']:.3f}x")
                print(line)


if __name__ == "__main__":
    main()
