// Placeholder until the generator lands: every n is reported unsupported, never a fake schedule.
#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

std::string double_binary_tree_unsupported(Rank /*n*/) { return "not implemented yet"; }

Schedule generate_double_binary_tree(const AlgorithmOptions& /*options*/) {
  throw ScheduleError("double_binary_tree: not implemented yet");
}

}  // namespace collsim
