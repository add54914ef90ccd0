#include "collsim/experiments/resource_estimate.hpp"

#include <cmath>
#include <string>

#include "collsim/algorithms/registry.hpp"

namespace collsim {
namespace {

constexpr Rank kExactUpTo = 512;
constexpr Rank kSmallN = 256;

double count_transfers(std::string_view algorithm, AlgorithmOptions options, Rank n) {
  options.n = n;
  // The straggler only relabels ranks; its count does not change with it.
  options.straggler.reset();
  return static_cast<double>(generate_schedule(algorithm, options).num_transfers());
}

}  // namespace

double cpu_s_per_transfer(std::string_view engine) {
  // Measured with `collsim simulate --algo stragglar -n 256 --delay 1ms` (two runs): replay
  // 15 ms and SimGrid 1.4 s for 2 x 130,050 transfers, rounded up.
  if (engine == "simgrid") return 6e-6;
  if (engine == "closed_form") return 5e-8;
  return 1e-7;
}

std::optional<double> estimate_transfers(std::string_view algorithm, const AlgorithmOptions& options) {
  const AlgorithmInfo& info = find_algorithm(algorithm);
  NConstraintContext context;  // hierarchical algorithms: the node size the schedule will have
  if (options.gpus_per_node > 0) context.gpus_per_node = options.gpus_per_node;
  const auto unsupported = [&](Rank n) { return !info.unsupported_reason(n, context).empty(); };
  if (options.n <= kExactUpTo) {
    if (unsupported(options.n)) return std::nullopt;
    return count_transfers(algorithm, options, options.n);
  }
  if (unsupported(kSmallN) || unsupported(kExactUpTo)) return std::nullopt;
  const double small = count_transfers(algorithm, options, kSmallN);
  const double large = count_transfers(algorithm, options, kExactUpTo);
  if (!(small > 0 && large > 0)) return std::nullopt;
  const double exponent = std::log(large / small) / std::log(static_cast<double>(kExactUpTo) / kSmallN);
  return large * std::pow(static_cast<double>(options.n) / kExactUpTo, exponent);
}

double schedule_bytes(double transfers) { return transfers * static_cast<double>(sizeof(Transfer)); }

double journal_bytes(double units, double runs) {
  // One line per unit: ~100 bytes of header and checksum, ~70 bytes per trial (six numbers).
  return units * 100.0 + runs * 70.0;
}

}  // namespace collsim
