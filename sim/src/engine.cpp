#include "collsim/sim/engine.hpp"

#include <fmt/format.h>

#include "collsim/models/error.hpp"

namespace collsim {

std::unique_ptr<Engine> make_engine(std::string_view name) {
  throw ConfigError(fmt::format("engine '{}' is not available in this build (known: closed_form, replay, simgrid)", name));
}

}  // namespace collsim
