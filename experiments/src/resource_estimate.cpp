#include "collsim/experiments/resource_estimate.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/units.hpp"

namespace collsim {
namespace {

constexpr Rank kExactUpTo = 512;
constexpr Rank kSmallN = 256;
// Pipeline depths counted as they are; deeper ones are extrapolated (a depth of 10^8 chunks
// took 8.8 s and 1.1 GB to generate at n = 8 only to be refused).
constexpr std::uint32_t kExactChunksUpTo = 1024;

ScheduleEstimate count_schedule(std::string_view algorithm, AlgorithmOptions options, Rank n) {
  // A sample smaller than the run keeps the run's share of late ranks (stragglar_online): k =
  // 300 of n = 1,024 is counted as 75 of 256, where 300 would not exist (it was refused as out of
  // range for n = 256, a valid run turned away by its own estimate).
  if (n < options.n && options.late_ranks > 1) {
    const double share = static_cast<double>(options.late_ranks) / options.n;
    options.late_ranks = static_cast<std::uint32_t>(std::clamp(std::llround(share * n), 1LL, static_cast<long long>(n) - 1));
  }
  options.n = n;
  // The straggler only relabels ranks; the counts do not change with it.
  options.straggler.reset();
  const Schedule s = generate_schedule(algorithm, options);
  ScheduleEstimate count;
  count.transfers = static_cast<double>(s.num_transfers());
  std::vector<std::uint32_t> in_round(s.num_ranks(), 0);
  std::vector<std::uint32_t> sends(s.num_ranks(), 0);
  std::vector<std::uint32_t> receives(s.num_ranks(), 0);
  for (const Phase& phase : s.phases) {
    for (std::size_t r = 0; r < phase.num_rounds(); ++r) {
      for (const Transfer& t : phase.round(r)) {
        ++in_round[t.src];
        ++in_round[t.dst];
        ++sends[t.src];
        ++receives[t.dst];
        if (sends[t.src] > 1 || receives[t.dst] > 1) count.shares_ports = true;
      }
      for (const Transfer& t : phase.round(r)) {
        sends[t.src] = 0;
        receives[t.dst] = 0;
      }
      for (const Transfer& t : phase.round(r)) {
        for (const Rank e : {t.src, t.dst}) {
          if (in_round[e] == 0) continue;  // counted through an earlier transfer of this round
          count.rank_rounds += 1;
          if (in_round[e] >= 3) count.listed_transfers += in_round[e];
          in_round[e] = 0;
        }
      }
    }
  }
  return count;
}

// Through (at_small, small) and (at_large, large) as a power law, evaluated at x; 0 stays 0.
double extrapolate(double small, double large, double at_small, double at_large, double x) {
  if (!(small > 0 && large > 0)) return large;
  const double exponent = std::log(large / small) / std::log(at_large / at_small);
  return large * std::pow(x / at_large, exponent);
}

ScheduleEstimate extrapolate(const ScheduleEstimate& small, const ScheduleEstimate& large, double at_small,
                             double at_large, double x) {
  ScheduleEstimate e;
  e.transfers = extrapolate(small.transfers, large.transfers, at_small, at_large, x);
  e.rank_rounds = extrapolate(small.rank_rounds, large.rank_rounds, at_small, at_large, x);
  e.listed_transfers = extrapolate(small.listed_transfers, large.listed_transfers, at_small, at_large, x);
  e.shares_ports = small.shares_ports || large.shares_ports;
  return e;
}

// The smallest multiple of `step` (0: 1) that is at least `n`.
Rank round_up(Rank n, std::uint32_t step) { return step <= 1 ? n : (n + step - 1) / step * step; }

}  // namespace

double cpu_s_per_transfer(std::string_view engine) {
  // Measured with `collsim simulate --algo stragglar -n 256 --delay 1ms` (two runs): replay
  // 15 ms and SimGrid 1.4 s for 2 x 130,050 transfers, rounded up.
  if (engine == "simgrid") return 6e-6;
  if (engine == "closed_form") return 5e-8;
  return 1e-7;
}

std::optional<ScheduleEstimate> estimate_schedule(std::string_view algorithm, const AlgorithmOptions& options) {
  const AlgorithmInfo& info = find_algorithm(algorithm);
  if (options.pipeline_chunks > kExactChunksUpTo) {
    // The row's depth rule, for the depth given: the counted depths below would not break it.
    if (const std::string why = info.pipeline_depth_error(options.pipeline_chunks); !why.empty()) {
      throw ScheduleError(why);
    }
    AlgorithmOptions half = options, full = options;
    half.pipeline_chunks = kExactChunksUpTo / 2;  // both counted exactly: no recursion
    full.pipeline_chunks = kExactChunksUpTo;
    const std::optional<ScheduleEstimate> small = estimate_schedule(algorithm, half);
    const std::optional<ScheduleEstimate> large = estimate_schedule(algorithm, full);
    if (!small || !large) return std::nullopt;
    return extrapolate(*small, *large, half.pipeline_chunks, full.pipeline_chunks, options.pipeline_chunks);
  }
  NConstraintContext context;  // hierarchical algorithms: the node size the schedule will have
  if (options.gpus_per_node > 0) context.gpus_per_node = options.gpus_per_node;
  const auto unsupported = [&](Rank n) { return !info.unsupported_reason(n, context).empty(); };
  // Hierarchical rows need whole nodes: the counted sizes are the multiples of the node size
  // nearest above 256 and 512 (3 GPUs per node: 258 and 513).
  const std::uint32_t node = info.hierarchical ? options.gpus_per_node : 0;
  const Rank small_n = round_up(kSmallN, node);
  Rank large_n = round_up(kExactUpTo, node);
  if (large_n <= small_n) large_n = 2 * small_n;
  if (options.n <= large_n) {
    if (unsupported(options.n)) return std::nullopt;
    return count_schedule(algorithm, options, options.n);
  }
  if (unsupported(small_n) || unsupported(large_n)) return std::nullopt;
  const ScheduleEstimate small = count_schedule(algorithm, options, small_n);
  const ScheduleEstimate large = count_schedule(algorithm, options, large_n);
  if (!(small.transfers > 0 && large.transfers > 0)) return std::nullopt;
  return extrapolate(small, large, small_n, large_n, options.n);
}

std::optional<double> estimate_transfers(std::string_view algorithm, const AlgorithmOptions& options) {
  if (const auto estimate = estimate_schedule(algorithm, options)) return estimate->transfers;
  return std::nullopt;
}

double schedule_bytes(double transfers) { return transfers * static_cast<double>(sizeof(Transfer)); }

double run_bytes(const ScheduleEstimate& estimate, const Engine& engine, const Topology& topology) {
  return run_bytes(estimate, engine.builds_event_index(topology, estimate.shares_ports));
}

double run_bytes(const ScheduleEstimate& estimate, bool event_index) {
  const double index = event_index ? event_index_bytes(estimate.rank_rounds, estimate.listed_transfers) : 0.0;
  return schedule_bytes(estimate.transfers) + index;
}

double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_bytes = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_bytes > 0 ? static_cast<double>(pages) * static_cast<double>(page_bytes) : 0.0;
}

std::string rough_size(double bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t u = 0;
  while (bytes >= 1024 && u + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", bytes, kUnits[u]);
}

double journal_bytes(double units, double runs) {
  // One line per unit: ~100 bytes of header and checksum, ~70 bytes per trial (six numbers).
  return units * 100.0 + runs * 70.0;
}

double memory_cap_bytes(const std::string& text, std::string_view option, double physical_bytes) {
  const double bytes = parse_size_bytes(text, option);
  if (!(bytes > 0)) throw ConfigError(fmt::format("{}: {} must be positive", option, text));
  // The guard exists to refuse a run before the kernel's OOM killer ends it; a cap above the
  // memory there is would let exactly those runs through.
  if (physical_bytes > 0 && bytes > physical_bytes) {
    throw ConfigError(fmt::format("{}: {} is more than this machine's memory ({}); a run that large would be "
                                  "killed for lack of memory, not refused",
                                  option, text, rough_size(physical_bytes)));
  }
  return bytes;
}

double memory_limit_option_bytes(const std::string& text, bool given) {
  return memory_cap_bytes(text, "--max-schedule-memory", given ? physical_memory_bytes() : 0.0);
}

std::string depth_clause(std::string_view algorithm, std::uint32_t pipeline_chunks) {
  if (pipeline_chunks == 0 || find_algorithm(algorithm).default_pipeline_chunks == 0) return {};
  return fmt::format(" with --pipeline-chunks {}", pipeline_chunks);
}

}  // namespace collsim
