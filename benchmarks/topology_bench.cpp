// Cluster topology construction time against n, measured against an NVSwitch of the same n.
//
// make_cluster computes routes by formula, so building it should stay linear in n like the
// NVSwitch (two links per GPU, nothing else): the ratio cluster / nvswitch should stay flat as n
// doubles, and the growth exponent of the cluster time should stay near 1. The structure is
// checked too (Topology::check, 4n + 2 x leaves links, 4-link routes between leaves); a wrong
// topology exits 1.
//
// usage: collsim_bench_topology [--max-n N] [--reps R]
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "bench_support.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/topology.hpp"

namespace {

constexpr std::uint32_t kMinN = 1024;
constexpr std::uint32_t kLargestN = 1u << 20;

struct Options {
  std::uint32_t max_n = 8192;
  int reps = 5;
};

// CPU time: on a shared machine wall time mostly measures the neighbours.
double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

template <class Build>
double median_build_s(int reps, Build&& build) {
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const double start = cpu_now();
    const collsim::Topology t = build();
    times.push_back(cpu_now() - start);
    // Keep the topology alive past the clock read, so its destruction is not timed.
    __asm__ __volatile__("" : : "r"(t.links.data()) : "memory");
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Empty when the cluster of n GPUs has the expected links and routes, else what is wrong.
std::string structure_problem(const collsim::Topology& t) {
  t.check();
  const std::size_t expected_links = 4u * std::size_t{t.n} + 2u * t.num_leaves();
  if (t.links.size() != expected_links) {
    return fmt::format("{} links, expected {} (4 per GPU + 2 per leaf)", t.links.size(), expected_links);
  }
  if (t.num_leaves() > 1 && t.route(t.n - 1, 0).size() != 4) {
    return fmt::format("route {} -> 0 has {} links, expected 4 (up, leaf up, spine down, down)", t.n - 1,
                       t.route(t.n - 1, 0).size());
  }
  return {};
}

std::uint32_t parse_count(std::string_view flag, std::string_view text, std::uint32_t min, std::uint32_t max) {
  std::uint32_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    throw collsim::ConfigError(fmt::format("{} '{}': expected an integer in {}..{}", flag, text, min, max));
  }
  return value;
}

constexpr const char* kUsage =
    "usage: collsim_bench_topology [--max-n N] [--reps R]\n"
    "  Builds cluster topologies (DGX H100 nodes, 1:1 leaf/spine) for n = 1024, 2048, ... up to N\n"
    "  (default 8192) and compares each build with an NVSwitch of the same n (median CPU time of\n"
    "  R builds, default 5). Exit 0 when every topology is well formed, 1 if not, 2 on bad arguments.\n";

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      fmt::print("{}", kUsage);
      std::exit(0);
    }
    if (flag != "--max-n" && flag != "--reps") throw collsim::ConfigError(fmt::format("unknown option '{}'", flag));
    if (i + 1 == argc) throw collsim::ConfigError(fmt::format("{} needs a value", flag));
    const std::string_view value = argv[++i];
    if (flag == "--max-n") options.max_n = parse_count(flag, value, kMinN, kLargestN);
    if (flag == "--reps") options.reps = static_cast<int>(parse_count(flag, value, 1, 1000));
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = parse_options(argc, argv);
  } catch (const collsim::ConfigError& e) {
    fmt::print(stderr, "collsim_bench_topology: error: {}\n{}", e.what(), kUsage);
    return 2;
  }
  try {
    const collsim::ClusterSpec cluster;
    const collsim::LinkModel nvlink{cluster.nvlink_latency_s, cluster.nvlink_bandwidth_Bps, 0.0};
    std::vector<double> ns, cluster_s;
    bool well_formed = true;
    fmt::print("{:>8} {:>8} {:>12} {:>15} {:>8}  {}\n", "n", "links", "cluster", "nvswitch (base)", "ratio",
               "structure");
    for (std::uint32_t n = kMinN; n <= options.max_n; n *= 2) {
      const double c = median_build_s(options.reps, [&] { return collsim::make_cluster(n, cluster); });
      const double b = median_build_s(options.reps, [&] { return collsim::make_nvswitch(n, nvlink); });
      const collsim::Topology t = collsim::make_cluster(n, cluster);
      const std::string problem = structure_problem(t);
      well_formed = well_formed && problem.empty();
      fmt::print("{:>8} {:>8} {:>10.2f}ms {:>13.2f}ms {:>7.2f}x  {}\n", n, t.links.size(), 1e3 * c, 1e3 * b, c / b,
                 problem.empty() ? "ok" : problem);
      ns.push_back(n);
      cluster_s.push_back(c);
    }
    fmt::print("cluster build time grows as n^{:.2f} (linear = 1)\n", collsim::bench::growth_exponent(ns, cluster_s));
    return well_formed ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "collsim_bench_topology: error: {}\n", e.what());
    return 1;
  }
}
