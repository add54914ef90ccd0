// Placeholder until the generator lands: every n is reported unsupported, never a fake schedule.
#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

std::string binomial_tree_unsupported(Rank /*n*/) { return "not implemented yet"; }

Schedule generate_binomial_tree(const AlgorithmOptions& /*options*/) {
  throw ScheduleError("binomial_tree: not implemented yet");
}

}  // namespace collsim
