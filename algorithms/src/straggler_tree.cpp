// Placeholder until the generator lands: every n is reported unsupported, never a fake schedule.
#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

std::string straggler_tree_unsupported(Rank /*n*/) { return "not implemented yet"; }

Schedule generate_straggler_tree(const AlgorithmOptions& /*options*/) {
  throw ScheduleError("straggler_tree: not implemented yet");
}

}  // namespace collsim
