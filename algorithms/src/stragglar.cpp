// Placeholder until the generator lands: every n is reported unsupported, never a fake schedule.
#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

std::string stragglar_unsupported(Rank /*n*/) { return "not implemented yet"; }

Schedule generate_stragglar(const AlgorithmOptions& /*options*/) {
  throw ScheduleError("stragglar: not implemented yet");
}

}  // namespace collsim
