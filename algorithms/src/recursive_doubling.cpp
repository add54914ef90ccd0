// Placeholder until the generator lands: every n is reported unsupported, never a fake schedule.
#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

std::string recursive_doubling_unsupported(Rank /*n*/) { return "not implemented yet"; }

Schedule generate_recursive_doubling(const AlgorithmOptions& /*options*/) {
  throw ScheduleError("recursive_doubling: not implemented yet");
}

}  // namespace collsim
