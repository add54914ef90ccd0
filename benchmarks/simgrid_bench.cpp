// SimGrid engine throughput: an AllReduce (ring by default) at n = 256 ... 4096 on an NVSwitch
// (or a topology file, e.g. the 2:1 oversubscribed cluster_h100_1024_2to1), 1 GiB per rank, one
// straggler 1 ms late.
//
// Every simgrid run already happens in a forked child (see simgrid_engine.hpp); its CPU time
// and peak RSS are read from getrusage(RUSAGE_CHILDREN). The baseline, measured in this process
// on the same schedule and config, is the replay engine (the event-free sweep on an NVSwitch, the
// event-driven max-min path on a contended fabric): x_replay = simgrid wall / replay wall. Also reported: transfers per second, the
// simulated time of both engines (they must agree), and the growth exponent of wall time.
//
// usage: collsim_bench_simgrid [--max-n N] [--min-n N] [--algorithm NAME] [--topology NAME|FILE]
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/topology.hpp"
#include "collsim/sim/replay_engine.hpp"
#include "collsim/sim/simgrid_engine.hpp"
#include "bench_args.hpp"
#include "bench_support.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct ChildUsage {
  double cpu_s = 0;
  double max_rss_MiB = 0;
};

ChildUsage children_usage() {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  const auto seconds = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + 1e-6 * static_cast<double>(tv.tv_usec); };
  return ChildUsage{seconds(usage.ru_utime) + seconds(usage.ru_stime), static_cast<double>(usage.ru_maxrss) / 1024.0};
}

using collsim::bench::growth_exponent;

}  // namespace

int main(int argc, char** argv) {
  collsim::Rank min_n = 256;
  collsim::Rank max_n = 4096;
  std::string algorithm = "ring";
  std::string topology;  // empty: nvswitch
  collsim::ArgParser parser("collsim_bench_simgrid",
                            "SimGrid engine vs replay on the same input: an AllReduce at n = min-n, 2 min-n, ... "
                            "max-n, 1 GiB per rank, one rank 1 ms late.");
  parser.program("collsim_bench_simgrid")
      .option("min-n", "", "N", "smallest n", "256")
      .option("max-n", "", "N", "largest n", "4096")
      .option("algorithm", "", "NAME", "algorithm: " + collsim::algorithm_names(), "ring")
      .option("topology", "", "NAME|FILE", "a configs/topologies name or a YAML file (default: nvswitch, 3 us, 450 GiB/s)");
  if (auto code = collsim::bench::parse_bench_args(parser, "collsim_bench_simgrid", argc, argv, [&] {
        min_n = collsim::bench::parse_rank_count(parser.get("min-n"), "--min-n");
        max_n = collsim::bench::parse_rank_count(parser.get("max-n"), "--max-n");
        if (min_n > max_n) throw collsim::ConfigError(fmt::format("--min-n {} is above --max-n {}", min_n, max_n));
        algorithm = parser.get("algorithm");
        collsim::find_algorithm(algorithm);  // an unknown name fails here, not after the first case
        topology = parser.get_optional("topology").value_or("");
      })) {
    return *code;
  }
  try {
    fmt::print("simgrid engine, {} on {}, 1 GiB, one rank 1 ms late\n", algorithm,
               topology.empty() ? std::string("nvswitch (3 us, 450 GiB/s)") : topology);
    fmt::print("wall_s: simgrid run() as a caller sees it (fork, SimGrid, result pipe); child_cpu_s and child_MiB\n"
               "from getrusage of the child; x_replay = simgrid wall / replay wall on the same input\n");
    fmt::print("{:>6} {:>11} {:>8} {:>11} {:>10} {:>9} {:>10} {:>9} {:>10} {:>9}\n", "n", "transfers", "wall_s",
               "child_cpu_s", "M xfer/s", "child_MiB", "replay_s", "x_replay", "sim_time_s", "rel_diff");
    std::vector<double> ns, walls;
    const auto simgrid = collsim::make_simgrid_engine();
    collsim::ReplayEngine replay;
    for (collsim::Rank n = min_n; n <= max_n; n *= 2) {
      const collsim::Schedule s = collsim::generate_schedule(algorithm, collsim::AlgorithmOptions{n, {}, 0});
      collsim::RunConfig config;
      config.size_bytes = 1024.0 * 1024 * 1024;
      config.topology = topology.empty() ? collsim::make_nvswitch(n, collsim::LinkModel{3e-6, 450.0 * 1024 * 1024 * 1024, 0.0})
                                         : collsim::load_topology(topology, n);
      config.arrival_s.assign(n, 0.0);
      config.arrival_s[n - 1] = 1e-3;

      auto t = Clock::now();
      const collsim::RunResult base = replay.run(s, config);
      const double replay_s = seconds_since(t);

      const ChildUsage before = children_usage();
      t = Clock::now();
      const collsim::RunResult r = simgrid->run(s, config);
      const double wall_s = seconds_since(t);
      const ChildUsage after = children_usage();

      const double transfers = static_cast<double>(r.transfers);
      fmt::print("{:>6} {:>11.0f} {:>8.3f} {:>11.3f} {:>10.2f} {:>9.0f} {:>10.4f} {:>9.1f} {:>10.6f} {:>9.1e}\n", n,
                 transfers, wall_s, after.cpu_s - before.cpu_s, transfers / wall_s / 1e6, after.max_rss_MiB, replay_s,
                 wall_s / replay_s, r.time_s, std::fabs(r.time_s - base.time_s) / base.time_s);
      std::fflush(stdout);
      ns.push_back(n);
      walls.push_back(wall_s);
    }
    if (ns.size() >= 2) {
      fmt::print("growth over n = {}..{}: simgrid wall time ~ n^{:.2f}\n", ns.front(), ns.back(), growth_exponent(ns, walls));
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "collsim_bench_simgrid: {}\n", e.what());
    return 1;
  }
  return 0;
}
