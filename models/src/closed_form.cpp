// Placeholder until the closed forms land: no algorithm has one yet.
#include "collsim/models/closed_form.hpp"

#include "collsim/models/error.hpp"

namespace collsim {

bool has_closed_form(std::string_view /*algorithm*/, StartMode /*start*/) { return false; }

ClosedFormResult closed_form_time(const ClosedFormInput& input) {
  throw ScheduleError(input.algorithm + ": no closed form implemented yet");
}

}  // namespace collsim
