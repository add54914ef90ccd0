// StragglAR schedule generation and verification time against ring, measured in one process.
//
// For each n: generate_schedule("stragglar") and verify_schedule timed separately (median over
// several repetitions), and ring generation + verification as the baseline any generator is
// compared with. Both wall and CPU time are reported: on a shared machine wall time mostly
// measures the neighbours, CPU time the work.
//
// usage: collsim_bench_schedule [--n N,N,...] [--reps R] [--rounds-table MAX_N]
//   --rounds-table prints the markdown table of completion rounds for n = 2..MAX_N instead
//   (the source of docs/stragglar_rounds.md).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/algorithms/verifier.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/quote.hpp"
#include "bench_args.hpp"

namespace {

using collsim::Rank;

struct Times {
  double wall_s = 0;
  double cpu_s = 0;
};

double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

template <class F>
Times timed(F&& f) {
  const auto w = std::chrono::steady_clock::now();
  const double c = cpu_now();
  f();
  return Times{std::chrono::duration<double>(std::chrono::steady_clock::now() - w).count(), cpu_now() - c};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Sample {
  std::vector<double> gen_wall, gen_cpu, ver_wall, ver_cpu;
  std::size_t rounds = 0, transfers = 0;
  bool verified = true;
};

Sample measure(std::string_view algorithm, Rank n, int reps) {
  Sample s;
  for (int i = 0; i < reps; ++i) {
    collsim::Schedule schedule;
    const Times g = timed([&] { schedule = collsim::generate_schedule(algorithm, collsim::AlgorithmOptions{n, {}, 0}); });
    std::vector<collsim::Diagnostic> d;
    const Times v = timed([&] { d = collsim::verify_schedule(schedule); });
    s.gen_wall.push_back(g.wall_s);
    s.gen_cpu.push_back(g.cpu_s);
    s.ver_wall.push_back(v.wall_s);
    s.ver_cpu.push_back(v.cpu_s);
    s.verified = s.verified && d.empty();
    s.rounds = schedule.phases.back().num_rounds();
    s.transfers = schedule.num_transfers();
  }
  return s;
}

int reps_for(Rank n, int requested) {
  if (requested > 0) return requested;
  return n <= 64 ? 21 : n <= 256 ? 11 : n <= 1024 ? 5 : 3;
}

std::vector<Rank> parse_list(const std::string& text) {
  std::vector<Rank> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    char* end = nullptr;
    const unsigned long v = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 2 || v > 65536) {
      throw collsim::ConfigError(fmt::format("--n: '{}' is not a rank count in 2..65536", collsim::quote_excerpt(item)));
    }
    out.push_back(static_cast<Rank>(v));
    pos = comma + 1;
  }
  return out;
}

void rounds_table(Rank max_n) {
  fmt::print("| n | lower bound n-1 | target n-2+ceil(log2 n) | reached | published |\n|---|---|---|---|---|\n");
  const std::vector<std::pair<Rank, int>> published{{6, 7},   {10, 12}, {12, 15}, {14, 17},  {20, 24},  {24, 27},
                                                    {40, 47}, {48, 57}, {80, 91}, {96, 108}, {192, 208}};
  for (Rank n = 2; n <= max_n; ++n) {
    const auto s = collsim::generate_schedule("stragglar", collsim::AlgorithmOptions{n, {}, 0});
    const std::size_t target = n == 2 ? 1 : n - 2 + std::bit_width(n - 1);
    std::string pub = "";
    for (const auto& [pn, pr] : published) {
      if (pn == n) pub = fmt::format("{}", pr);
    }
    const std::size_t reached = s.phases.back().num_rounds();
    fmt::print("| {} | {} | {} | {}{} | {} |\n", n, n - 1, target, reached, reached == target ? "" : " (+" + std::to_string(reached - target) + ")", pub);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Rank> ns{64, 256, 1024, 4096};
  int reps = 0;
  std::optional<Rank> rounds_table_max_n;
  collsim::ArgParser parser("collsim_bench_schedule",
                            "StragglAR schedule generation and verification vs ring, CPU time per n.");
  parser.program("collsim_bench_schedule")
      .option("n", "", "N,N,...", "rank counts, each in 2..65536", "64,256,1024,4096")
      .option("reps", "", "R", "repetitions per n (default: by n)")
      .option("rounds-table", "", "MAX_N", "print the round counts of n = 2..MAX_N instead of timing");
  if (auto code = collsim::bench::parse_bench_args(parser, "collsim_bench_schedule", argc, argv, [&] {
        ns = parse_list(parser.get("n"));
        if (auto r = parser.get_optional("reps")) {
          const auto value = collsim::parse_unsigned(*r, "--reps");
          if (value < 1 || value > 1'000'000) throw collsim::ConfigError(fmt::format("--reps {} is not in 1..1000000", value));
          reps = static_cast<int>(value);
        }
        if (auto t = parser.get_optional("rounds-table")) rounds_table_max_n = parse_list(*t).front();
      })) {
    return *code;
  }
  try {
    if (rounds_table_max_n) {
      rounds_table(*rounds_table_max_n);
      return 0;
    }
    fmt::print("StragglAR schedule generation and verification vs ring (median; CPU time, wall in brackets)\n\n");
    fmt::print("{:>5} {:>6} {:>10} | {:>20} {:>20} {:>20} | {:>20} | {:>7} {:>7} {:>9}\n", "n", "rounds", "transfers",
               "stragglar gen ms", "verify ms", "gen+verify ms", "ring gen+verify ms", "gen/all", "vs ring", "verified");
    for (const Rank n : ns) {
      const int r = reps_for(n, reps);
      const Sample a = measure("stragglar", n, r);
      const Sample b = measure("ring", n, r);
      const double gen = median(a.gen_cpu), ver = median(a.ver_cpu);
      const double ring = median(b.gen_cpu) + median(b.ver_cpu);
      const auto ms = [](double cpu, double wall) { return fmt::format("{:9.2f} [{:8.2f}]", 1e3 * cpu, 1e3 * wall); };
      fmt::print("{:>5} {:>6} {:>10} | {:>20} {:>20} {:>20} | {:>20} | {:>7.3f} {:>7.3f} {:>9}\n", n, a.rounds, a.transfers,
                 ms(gen, median(a.gen_wall)), ms(ver, median(a.ver_wall)),
                 ms(gen + ver, median(a.gen_wall) + median(a.ver_wall)),
                 ms(ring, median(b.gen_wall) + median(b.ver_wall)), gen / (gen + ver), (gen + ver) / ring,
                 a.verified && b.verified ? "yes" : "NO");
    }
    fmt::print("\ngen/all: share of generation in stragglar gen+verify; vs ring: stragglar gen+verify / ring gen+verify.\n");
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "collsim_bench_schedule: {}\n", e.what());
    return 2;
  }
}
