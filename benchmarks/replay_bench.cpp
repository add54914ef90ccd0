// Replay engine throughput and memory: ring and StragglAR at n = 256 ... 4096 on an NVSwitch.
//
// Each case runs in a forked child so that its peak RSS (getrusage) is its own. Reported per
// case: schedule generation time, one plain read pass over all transfers (the baseline: the
// least any engine must do), replay time and its ratio to the baseline, transfers per second,
// and peak RSS; then the growth exponents of replay time and peak memory fitted over n.
//
// usage: collsim_bench_replay [--max-n N] [--event-max-n N]
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"
#include "collsim/sim/replay_engine.hpp"
#include "bench_args.hpp"
#include "bench_support.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Measurement {
  int ok = 0;                  // 1 measured, 0 failed (message in `error`)
  double generate_s = 0;
  double scan_s = 0;
  double replay_s = 0;
  double replay_cpu_s = 0;
  double transfers = 0;
  double sim_time_s = 0;
  int fast = 0;
  double peak_rss_MiB = 0;
  char error[200] = {};
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// CPU time of this process: the machine may be shared, and wall time then measures the neighbours.
double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

Measurement measure(const std::string& algorithm, collsim::Rank n, bool allow_fast) {
  Measurement m;
  try {
    auto t = Clock::now();
    const collsim::Schedule s = collsim::generate_schedule(algorithm, collsim::AlgorithmOptions{n, {}, 0});
    m.generate_s = seconds_since(t);

    double cpu = cpu_now();
    std::uint64_t sink = 0;
    for (const auto& phase : s.phases) {
      for (const auto& tr : phase.transfers()) sink = sink * 31 + (tr.src ^ tr.dst ^ tr.chunk_begin);
    }
    // An empty asm that consumes `sink` and clobbers memory pins the scan before the clock read.
    __asm__ __volatile__("" : : "r"(sink) : "memory");
    m.scan_s = cpu_now() - cpu;

    collsim::RunConfig config;
    config.size_bytes = 1024.0 * 1024 * 1024;
    config.topology = collsim::make_nvswitch(n, collsim::LinkModel{3e-6, 450.0 * 1024 * 1024 * 1024, 0.0});
    config.arrival_s.assign(n, 0.0);
    config.arrival_s[n - 1] = 1e-3;  // one straggler, 1 ms late
    collsim::ReplayEngine engine(collsim::ReplayOptions{allow_fast});
    t = Clock::now();
    cpu = cpu_now();
    const collsim::RunResult r = engine.run(s, config);
    m.replay_cpu_s = cpu_now() - cpu;
    m.replay_s = seconds_since(t);
    m.transfers = static_cast<double>(r.transfers);
    m.sim_time_s = r.time_s;
    m.fast = engine.last_run_was_fast() ? 1 : 0;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    m.peak_rss_MiB = static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
    m.ok = 1;
  } catch (const std::exception& e) {
    std::snprintf(m.error, sizeof(m.error), "%s", e.what());
  }
  return m;
}

// Runs measure() in a child process so peak RSS is per case.
Measurement measure_isolated(const std::string& algorithm, collsim::Rank n, bool allow_fast) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const Measurement m = measure(algorithm, n, allow_fast);
    const ssize_t written = write(fds[1], &m, sizeof(m));
    _exit(written == static_cast<ssize_t>(sizeof(m)) ? 0 : 1);
  }
  close(fds[1]);
  Measurement m;
  const ssize_t got = read(fds[0], &m, sizeof(m));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != static_cast<ssize_t>(sizeof(m))) {
    m = Measurement{};
    std::snprintf(m.error, sizeof(m.error), "child failed (status %d)", status);
  }
  return m;
}

using collsim::bench::growth_exponent;

}  // namespace

int main(int argc, char** argv) {
  collsim::Rank max_n = 4096;
  collsim::Rank event_max_n = 1024;
  collsim::ArgParser parser("collsim_bench_replay",
                            "Replay engine throughput and memory: ring and StragglAR (fast path) and ring (event "
                            "path) at n = 256, 512, ... on an NVSwitch, each case in its own process.");
  parser.program("collsim_bench_replay")
      .option("max-n", "", "N", "largest n of the fast-path cases (>= 256)", "4096")
      .option("event-max-n", "", "N", "largest n of the event-path case (>= 256)", "1024");
  if (auto code = collsim::bench::parse_bench_args(parser, "collsim_bench_replay", argc, argv, [&] {
        // Every case starts at n = 256: a smaller maximum would measure nothing.
        max_n = collsim::bench::parse_rank_count(parser.get("max-n"), "--max-n", 256);
        event_max_n = collsim::bench::parse_rank_count(parser.get("event-max-n"), "--event-max-n", 256);
      })) {
    return *code;
  }
  struct Case {
    std::string algorithm;
    bool fast;
    collsim::Rank max_n;
  };
  const std::vector<Case> cases{{"ring", true, max_n}, {"stragglar", true, max_n}, {"ring", false, event_max_n}};

  fmt::print("replay engine on nvswitch, 1 GiB, straggler 1 ms late; each case in its own process\n");
  fmt::print("times: gen_s wall; scan_s (one read pass over the transfers, the baseline) and cpu_s in CPU\n"
             "time; x_scan = cpu_s / scan_s; M/s = million transfers per second of CPU (wall in brackets)\n");
  fmt::print("{:<10} {:>6} {:>6} {:>11} {:>8} {:>8} {:>8} {:>8} {:>7} {:>16} {:>9}\n", "algorithm", "path", "n",
             "transfers", "gen_s", "scan_s", "wall_s", "cpu_s", "x_scan", "M/s cpu (wall)", "peak_MiB");
  for (const Case& c : cases) {
    std::vector<double> ns, times, rss;
    for (collsim::Rank n = 256; n <= c.max_n; n *= 2) {
      const Measurement m = measure_isolated(c.algorithm, n, c.fast);
      if (m.ok == 0) {
        fmt::print("{:<10} {:>6} {:>6}  not measured: {}\n", c.algorithm, c.fast ? "fast" : "event", n, m.error);
        continue;
      }
      fmt::print("{:<10} {:>6} {:>6} {:>11.0f} {:>8.3f} {:>8.2g} {:>8.3f} {:>8.3f} {:>7.1f} {:>7.1f} ({:>6.1f}) {:>9.1f}\n",
                 c.algorithm, m.fast ? "fast" : "event", n, m.transfers, m.generate_s, m.scan_s, m.replay_s,
                 m.replay_cpu_s, m.replay_cpu_s / m.scan_s, m.transfers / m.replay_cpu_s / 1e6,
                 m.transfers / m.replay_s / 1e6, m.peak_rss_MiB);
      ns.push_back(n);
      times.push_back(m.replay_cpu_s);
      rss.push_back(m.peak_rss_MiB);
    }
    if (ns.size() >= 2) {
      fmt::print("{:<10} {:>6} growth over n = {}..{}: replay CPU time ~ n^{:.2f}, peak memory ~ n^{:.2f}\n", c.algorithm,
                 c.fast ? "fast" : "event", ns.front(), ns.back(), growth_exponent(ns, times),
                 growth_exponent(ns, rss));
    }
  }
  return 0;
}
