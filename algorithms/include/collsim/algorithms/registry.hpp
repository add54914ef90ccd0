// The algorithm registry: one entry per AllReduce algorithm, looked up by its name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/algorithms/schedule.hpp"

namespace collsim {

/// Options shared by every generator. Generators ignore what does not apply to them.
struct AlgorithmOptions {
  Rank n = 0;                          ///< number of ranks, >= 2
  std::optional<Rank> straggler;       ///< expected straggler; default n-1 (straggler-aware algorithms)
  std::uint32_t pipeline_chunks = 0;   ///< trees: pipeline depth in chunks; 0 = algorithm default
  std::uint32_t gpus_per_node = 0;     ///< hierarchical algorithms: GPUs per node (from the topology); 0 = unknown
};

/// Generator of one algorithm. Generators build the schedule with the straggler at rank n-1;
/// generate_schedule() relabels for other straggler ranks.
using GeneratorFn = Schedule (*)(const AlgorithmOptions& options);
/// Returns an empty string if n is supported, else the reason it is not.
using SupportFn = std::string (*)(Rank n);

struct AlgorithmInfo {
  std::string_view name;          ///< the one name used in YAML, CSV, plots and CUDA
  std::string_view summary;       ///< one line for --help and listings
  std::string_view supported_n;   ///< human description, e.g. "every n >= 2"
  bool straggler_aware = false;   ///< the schedule depends on which rank is late
  SupportFn unsupported_reason = nullptr;
  GeneratorFn generate = nullptr;
};

/// Every registered algorithm, in a fixed order (StragglAR first, then the baselines).
const std::vector<AlgorithmInfo>& all_algorithms();

/// The names of all algorithms, comma separated (for error messages and --help).
std::string algorithm_names();

/// Looks an algorithm up by name. Throws ConfigError naming the unknown name and the known ones.
const AlgorithmInfo& find_algorithm(std::string_view name);

/// Generates the schedule of `name` for `options`. Throws ConfigError for an unknown name,
/// ScheduleError for n < 2, an unsupported n, or a straggler rank >= n.
Schedule generate_schedule(std::string_view name, const AlgorithmOptions& options);

}  // namespace collsim
