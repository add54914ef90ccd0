#include <fmt/format.h>

#include "collsim/models/error.hpp"
#include "collsim/models/link_model.hpp"

namespace collsim {

StartMode parse_start_mode(std::string_view text, std::string_view what) {
  for (StartMode mode : {StartMode::Barrier, StartMode::Eager}) {
    if (text == start_mode_name(mode)) return mode;
  }
  throw ConfigError(fmt::format("{}: unknown start mode '{}' (known: barrier, eager)", what, text));
}

}  // namespace collsim
