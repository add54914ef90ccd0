// Placeholder until the generator lands: every n is reported unsupported, never a fake schedule.
#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

std::string direct_unsupported(Rank /*n*/) { return "not implemented yet"; }

Schedule generate_direct(const AlgorithmOptions& /*options*/) {
  throw ScheduleError("direct: not implemented yet");
}

}  // namespace collsim
