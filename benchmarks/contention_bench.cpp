// Replay on an oversubscribed fabric against the same run on a non-blocking one.
//
// For each algorithm and n: one AllReduce of 1 GiB with rank n-1 30 ms late on the 1:1 cluster
// (cluster_h100_1024's layout resized to n) and on the 2:1 one (cluster_h100_1024_2to1), both in
// this process, one after the other. The 1:1 run is the baseline: x_2to1 = CPU time on 2:1 / CPU
// time on 1:1 (wall_x: the same for wall-clock time, which other processes on the machine
// inflate). Also reported: the bandwidth reshares of the 2:1 run (and the share of them the solver
// skipped as known to change no rate), the flows and the bundles they
// took in on average, CPU time per re-shared flow, and the simulated times (2:1 is never faster).
// --per-flow runs the per-flow reference solver instead of the bundled default (the figures
// before bundling; the simulated times agree to rounding). --fabrics FLAT,OVER compares other
// shipped clusters (e.g. cluster_h100_4096,cluster_h100_4096_2to1, rail-optimized). --check
// also runs the contended case with the other solver and prints the largest relative difference
// of a rank's finish time (how exact the default is against the reference, in the same run).
// --finish-times FILE writes every rank's finish time of each contended run (17 digits), so that
// two builds of the engine can be compared rank by rank (scripts/compare_finish_times.py).
// --reshare-interval-ns T runs the contended case in the approximate mode (RunConfig::
// reshare_interval_s = T ns); with --check, rel_diff is then against the exact bundled solver.
// --sensitivity K runs the contended case K more times with every rank's arrival moved by a draw
// of up to 1 ps (measure_sensitivity), and prints the largest relative finish-time difference
// against the unmoved run: the model's own sensitivity. Where it exceeds 1e-9, no solver can be
// held to another to 1e-9 (docs/performance.md, "Eighth pass"), since moving an input by 1 ps
// moves the answer more than that.
// --event-path also runs the 1:1 case on replay's event path (the one-sweep path off) and prints
// its CPU time, cpu_ev_1to1: what the event path costs where nothing contends, so that the 2:1
// time splits into the event path's own cost and what contention adds.
//
// usage: collsim_bench_contention [--min-n N] [--max-n N] [--algorithms A,B,...] [--delay-ms D] [--per-flow]
//                                 [--fabrics FLAT,OVER] [--check] [--finish-times FILE]
//                                 [--reshare-interval-ns T] [--sensitivity K] [--event-path]
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <exception>
#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/topology.hpp"
#include "collsim/sim/metrics.hpp"
#include "collsim/sim/replay_engine.hpp"
#include "collsim/sim/sensitivity.hpp"

namespace {

constexpr const char* kUsage =
    "usage: collsim_bench_contention [--min-n N] [--max-n N] [--algorithms A,B,...] [--delay-ms D] [--per-flow]\n"
    "                                [--fabrics FLAT,OVER] [--check] [--finish-times FILE] [--reshare-interval-ns T]\n"
    "                                [--sensitivity K] [--event-path]\n"
    "  replay on cluster_h100_1024_2to1 vs cluster_h100_1024 (their layout at n GPUs), 1 GiB, rank n-1 late\n"
    "  defaults: --min-n 256 --max-n 1024 --algorithms stragglar,ring,recursive_halving_doubling --delay-ms 30\n"
    "  --per-flow: the per-flow reference max-min solver instead of the bundled one\n"
    "  --fabrics FLAT,OVER: two shipped clusters instead (default cluster_h100_1024,cluster_h100_1024_2to1)\n"
    "  --check: also run OVER with the other solver; rel_diff = largest relative finish-time difference\n"
    "  --finish-times FILE: write 'algorithm n rank finish_s' of every OVER run (17 significant digits)\n"
    "  --reshare-interval-ns T: OVER in the approximate mode (a solve at most every T ns; 0 = exact);\n"
    "                           --check then compares it with the exact run\n"
    "  --sensitivity K: also run OVER K times with each rank's arrival moved by up to 1 ps; sensitivity =\n"
    "                   largest relative finish-time difference against the unmoved run (the model's own)\n"
    "  --event-path: also run FLAT on the event path (one-sweep path off): cpu_ev_1to1\n";

double wall_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Options {
  collsim::Rank min_n = 256;
  collsim::Rank max_n = 1024;
  std::vector<std::string> algorithms{"stragglar", "ring", "recursive_halving_doubling"};
  double delay_s = 30e-3;
  bool per_flow = false;
  bool check = false;
  bool event_path = false;  // --event-path
  std::string flat = "cluster_h100_1024";
  std::string over = "cluster_h100_1024_2to1";
  std::string finish_times_path;  // empty: none written
  double interval_s = 0;          // the approximate mode on OVER (0: exact)
  unsigned long sensitivity_runs = 0;  // --sensitivity K
};

unsigned long parse_count(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  unsigned long value = 0;
  try {
    value = std::stoul(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || text[0] == '-') {
    throw collsim::ConfigError(fmt::format("{} '{}' is not a whole number", flag, text));
  }
  return value;
}

// Returns false when --help was asked for.
bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") return false;
    if (flag == "--per-flow") {
      o.per_flow = true;
      continue;
    }
    if (flag == "--check") {
      o.check = true;
      continue;
    }
    if (flag == "--event-path") {
      o.event_path = true;
      continue;
    }
    if (i + 1 >= argc) throw collsim::ConfigError(fmt::format("{} needs a value (or unknown option)", flag));
    const std::string value = argv[++i];
    if (flag == "--min-n") {
      o.min_n = static_cast<collsim::Rank>(parse_count(flag, value));
    } else if (flag == "--max-n") {
      o.max_n = static_cast<collsim::Rank>(parse_count(flag, value));
    } else if (flag == "--finish-times") {
      o.finish_times_path = value;
    } else if (flag == "--reshare-interval-ns") {
      o.interval_s = 1e-9 * static_cast<double>(parse_count(flag, value));
    } else if (flag == "--sensitivity") {
      o.sensitivity_runs = parse_count(flag, value);
      if (o.sensitivity_runs > collsim::kMaxSensitivityRuns) {
        throw collsim::ConfigError(fmt::format("--sensitivity {} is above {}", value, collsim::kMaxSensitivityRuns));
      }
    } else if (flag == "--delay-ms") {
      o.delay_s = 1e-3 * static_cast<double>(parse_count(flag, value));
    } else if (flag == "--fabrics") {
      const std::size_t comma = value.find(',');
      if (comma == std::string::npos || value.find(',', comma + 1) != std::string::npos) {
        throw collsim::ConfigError(fmt::format("--fabrics '{}' must be two topology names, FLAT,OVER", value));
      }
      o.flat = value.substr(0, comma);
      o.over = value.substr(comma + 1);
      for (const std::string& name : {o.flat, o.over}) {
        if (collsim::load_topology(name).kind != collsim::TopologyKind::Cluster) {
          throw collsim::ConfigError(fmt::format("--fabrics: '{}' is not a cluster", name));
        }
      }
    } else if (flag == "--algorithms") {
      o.algorithms.clear();
      std::size_t start = 0;
      while (start <= value.size()) {
        const std::size_t comma = value.find(',', start);
        const std::string name = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        collsim::find_algorithm(name);  // throws for an unknown name
        o.algorithms.push_back(name);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else {
      throw collsim::ConfigError(fmt::format("unknown option '{}'", flag));
    }
  }
  if (o.interval_s > 0 && o.per_flow) throw collsim::ConfigError("--reshare-interval-ns needs the bundled solver, not --per-flow");
  if (o.min_n < 2 || o.max_n < o.min_n) {
    throw collsim::ConfigError(fmt::format("--min-n {} and --max-n {} must satisfy 2 <= min <= max", o.min_n, o.max_n));
  }
  return true;
}

// The shipped cluster's layout (16 nodes of 8 GPUs per leaf) at any n, past its own 1,024 GPUs
// too, so that every n compares the same fabric.
collsim::Topology resized(const std::string& name, collsim::Rank n) {
  const collsim::Topology shipped = collsim::load_topology(name);
  if (n <= shipped.n) return collsim::load_topology(name, n);
  return collsim::make_cluster(n, shipped.cluster, shipped.link.gamma_s_per_byte, shipped.name);
}

struct Run {
  double cpu_s = 0;
  double wall_s = 0;
  double time_s = 0;
  std::vector<double> finish_s;
  collsim::ReplaySharingStats stats;
};

collsim::RunConfig contended_config(const collsim::Schedule& schedule, const collsim::Topology& topology, double delay_s,
                                    double interval_s) {
  collsim::RunConfig config;
  config.size_bytes = 1024.0 * 1024 * 1024;
  config.topology = topology;
  config.start = collsim::StartMode::Barrier;
  config.arrival_s.assign(schedule.n, 0.0);
  config.arrival_s.back() = delay_s;
  config.reshare_interval_s = interval_s;
  return config;
}

collsim::ReplayEngine make_replay(bool per_flow, bool fast_path = true) {
  collsim::ReplayOptions options;
  options.bundle_flows = !per_flow;
  options.allow_fast_path = fast_path;
  return collsim::ReplayEngine(options);
}

Run run_once(const collsim::Schedule& schedule, const collsim::Topology& topology, double delay_s, bool per_flow,
             double interval_s = 0, bool fast_path = true) {
  const collsim::RunConfig config = contended_config(schedule, topology, delay_s, interval_s);
  collsim::ReplayEngine engine = make_replay(per_flow, fast_path);
  Run run;
  const double w0 = wall_now();
  const double t0 = cpu_now();
  const collsim::RunResult result = engine.run(schedule, config);
  run.cpu_s = cpu_now() - t0;
  run.wall_s = wall_now() - w0;
  run.time_s = result.time_s;
  run.finish_s = result.finish_s;
  run.stats = engine.last_sharing_stats();
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    if (!parse(argc, argv, options)) {
      fmt::print("{}", kUsage);
      return 0;
    }
  } catch (const collsim::Error& e) {
    fmt::print(stderr, "collsim_bench_contention: error: {}\n{}", e.what(), kUsage);
    return 2;
  }
  std::FILE* finish_times = nullptr;
  if (!options.finish_times_path.empty()) {
    finish_times = std::fopen(options.finish_times_path.c_str(), "w");
    if (finish_times == nullptr) {
      fmt::print(stderr, "collsim_bench_contention: error: cannot write '{}'\n", options.finish_times_path);
      return 1;
    }
  }
  try {
    fmt::print("replay ({} solver{}) on {} (1to1) and {} (2to1), 1 GiB, rank n-1 {} ms late, barrier start; CPU "
               "seconds of this process\n",
               options.per_flow ? "per-flow" : "bundled",
               options.interval_s > 0 ? fmt::format(", approximate: a solve at most every {:g} ns", options.interval_s * 1e9) : "",
               options.flat, options.over, options.delay_s * 1e3);
    fmt::print(
        "{:<28} {:>6} {:>9} {:>9} {:>7} {:>7} {:>10} {:>7} {:>9} {:>10} {:>9} {:>11} {:>12} {:>11} {:>11}{}{}{}\n",
        "algorithm", "n", "cpu_1to1", "cpu_2to1", "x_2to1", "wall_x", "reshares", "skipped", "flows/rs", "bundles/rs",
        "links/rs", "redated/rs", "us/rs-flow", "time_1to1", "time_2to1", options.check ? "   rel_diff" : "",
        options.sensitivity_runs > 0 ? " sensitivity" : "", options.event_path ? " cpu_ev_1to1" : "");
    for (const std::string& algorithm : options.algorithms) {
      for (collsim::Rank n = options.min_n; n <= options.max_n; n *= 2) {
        collsim::AlgorithmOptions ao;
        ao.n = n;
        const collsim::Schedule schedule = collsim::generate_schedule(algorithm, ao);
        const Run flat = run_once(schedule, resized(options.flat, n), options.delay_s, options.per_flow);
        const collsim::Topology over_topology = resized(options.over, n);
        const Run over = run_once(schedule, over_topology, options.delay_s, options.per_flow, options.interval_s);
        std::string diff;
        if (options.check) {
          // Against the other solver, or in the approximate mode against the exact (bundled) run.
          const bool other_per_flow = !options.per_flow && options.interval_s == 0;
          const Run other = run_once(schedule, over_topology, options.delay_s, other_per_flow);
          diff = fmt::format(" {:>10.1e}", collsim::largest_relative_difference(over.finish_s, other.finish_s));
        }
        if (options.sensitivity_runs > 0) {
          collsim::ReplayEngine engine = make_replay(options.per_flow);
          const collsim::Sensitivity s = collsim::measure_sensitivity(
              engine, schedule, contended_config(schedule, over_topology, options.delay_s, options.interval_s), over.finish_s,
              options.sensitivity_runs, 0);
          diff += fmt::format(" {:>11.1e}", s.relative);
        }
        if (options.event_path) {
          const Run event = run_once(schedule, resized(options.flat, n), options.delay_s, options.per_flow, 0, false);
          if (collsim::largest_relative_difference(event.finish_s, flat.finish_s) > 1e-9) {
            throw collsim::Error("the event path and the one-sweep path disagree on 1:1");
          }
          diff += fmt::format(" {:>11.3f}", event.cpu_s);
        }
        const auto& st = over.stats;
        const double per_reshare = st.reshares > 0 ? static_cast<double>(st.flows_reshared) / st.reshares : 0.0;
        const double bundles_per_reshare =
            st.reshares > 0 ? static_cast<double>(st.bundles_reshared) / st.reshares : 0.0;
        const double links_per_reshare =
            st.reshares > 0 ? static_cast<double>(st.links_reshared) / st.reshares : 0.0;
        const double redated_per_reshare = st.reshares > 0 ? static_cast<double>(st.redated) / st.reshares : 0.0;
        const double us_per_flow = st.flows_reshared > 0 ? 1e6 * over.cpu_s / st.flows_reshared : 0.0;
        const double skipped = st.reshares > 0 ? 100.0 * static_cast<double>(st.reshares_skipped) / st.reshares : 0.0;
        if (options.interval_s > 0) {
          diff += fmt::format("  deferred {:.1f}%", st.reshares > 0 ? 100.0 * static_cast<double>(st.reshares_deferred) / st.reshares : 0.0);
        }
        fmt::print("{:<28} {:>6} {:>9.3f} {:>9.3f} {:>7.1f} {:>7.1f} {:>10} {:>6.1f}% {:>9.1f} {:>10.1f} {:>9.1f} {:>11.1f} "
                   "{:>12.4f} {:>9.3f}ms {:>9.3f}ms{}\n",
                   algorithm, n, flat.cpu_s, over.cpu_s, over.cpu_s / flat.cpu_s, over.wall_s / flat.wall_s,
                   st.reshares, skipped, per_reshare, bundles_per_reshare, links_per_reshare, redated_per_reshare, us_per_flow,
                   flat.time_s * 1e3, over.time_s * 1e3, diff);
        std::fflush(stdout);
        if (finish_times != nullptr) {
          for (std::size_t r = 0; r < over.finish_s.size(); ++r) {
            fmt::print(finish_times, "{} {} {} {:.17g}\n", algorithm, n, r, over.finish_s[r]);
          }
          std::fflush(finish_times);
        }
        if (n > options.max_n / 2) break;  // no overflow past max_n
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "collsim_bench_contention: error: {}\n", e.what());
    if (finish_times != nullptr) std::fclose(finish_times);
    return 1;
  }
  if (finish_times != nullptr) std::fclose(finish_times);
  return 0;
}
