#include "collsim/algorithms/registry.hpp"

#include <fmt/format.h>

#include <numeric>

#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/quote.hpp"

namespace collsim {

const std::vector<AlgorithmInfo>& all_algorithms() {
  static const std::vector<AlgorithmInfo> kAlgorithms{
      {"stragglar", "ReduceScatter among the ready ranks during the delay, then synthesized completion rounds",
       "every n >= 2", true, &stragglar_unsupported, &generate_stragglar},
      {"ring", "ring ReduceScatter + ring AllGather over n chunks", "every n >= 2", false,
       &ring_unsupported, &generate_ring},
      {"recursive_halving_doubling", "Rabenseifner: recursive-halving ReduceScatter + recursive-doubling AllGather",
       "every n >= 2 (extra ranks fold into the largest power of two)", false,
       &recursive_halving_doubling_unsupported, &generate_recursive_halving_doubling},
      {"recursive_doubling", "log2 n rounds of full-buffer pairwise exchange",
       "every n >= 2 (extra ranks fold into the largest power of two)", false,
       &recursive_doubling_unsupported, &generate_recursive_doubling},
      {"binomial_tree", "pipelined binomial-tree reduce to rank 0, then pipelined binomial broadcast",
       "every n >= 2", false, &binomial_tree_unsupported, &generate_binomial_tree},
      {"double_binary_tree", "NCCL's two complementary pipelined binary trees, half the buffer each",
       "every n >= 2", false, &double_binary_tree_unsupported, &generate_double_binary_tree},
      {"direct", "AllReduce among the ready ranks, full-buffer exchange with the straggler, doubling broadcast",
       "every n >= 2", true, &direct_unsupported, &generate_direct},
      {"straggler_tree", "pipelined tree reduce among the ready ranks, straggler joins at the root, pipelined broadcast",
       "every n >= 2", true, &straggler_tree_unsupported, &generate_straggler_tree},
  };
  return kAlgorithms;
}

std::string algorithm_names() {
  std::string names;
  for (const auto& a : all_algorithms()) names += fmt::format("{}{}", names.empty() ? "" : ", ", a.name);
  return names;
}

const AlgorithmInfo& find_algorithm(std::string_view name) {
  for (const auto& a : all_algorithms()) {
    if (a.name == name) return a;
  }
  throw ConfigError(fmt::format("unknown algorithm '{}' (known: {})", quote_excerpt(name), algorithm_names()));
}

Schedule generate_schedule(std::string_view name, const AlgorithmOptions& options) {
  const AlgorithmInfo& info = find_algorithm(name);
  if (options.n < 2) {
    throw ScheduleError(fmt::format("{}: n = {} is not supported (n must be at least 2)", name, options.n));
  }
  if (const std::string why = info.unsupported_reason(options.n); !why.empty()) {
    throw ScheduleError(fmt::format("{}: n = {} is not supported: {}", name, options.n, why));
  }
  const Rank straggler = options.straggler.value_or(options.n - 1);
  if (straggler >= options.n) {
    throw ScheduleError(fmt::format("{}: straggler rank {} is out of range for n = {} (valid: 0..{})",
                                    name, straggler, options.n, options.n - 1));
  }
  Schedule schedule = info.generate(options);
  schedule.algorithm = std::string(info.name);
  if (info.straggler_aware) {
    schedule.straggler = options.n - 1;
    if (straggler != options.n - 1) {
      // Swap the roles of rank n-1 and the requested straggler; every other rank keeps its id.
      std::vector<Rank> new_rank_of(options.n);
      std::iota(new_rank_of.begin(), new_rank_of.end(), Rank{0});
      std::swap(new_rank_of[straggler], new_rank_of[options.n - 1]);
      schedule.relabel(new_rank_of);
    }
  }
  return schedule;
}

}  // namespace collsim
