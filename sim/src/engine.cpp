#include "collsim/sim/engine.hpp"

#include <fmt/format.h>

#include "collsim/models/error.hpp"
#include "collsim/sim/closed_form_engine.hpp"
#include "collsim/sim/replay_engine.hpp"

#ifdef COLLSIM_HAVE_SIMGRID
#include "collsim/sim/simgrid_engine.hpp"
#endif

namespace collsim {

std::unique_ptr<Engine> make_engine(std::string_view name) {
  if (name == "closed_form") return make_closed_form_engine();
  if (name == "replay") return make_replay_engine();
  if (name == "simgrid") {
#ifdef COLLSIM_HAVE_SIMGRID
    return make_simgrid_engine();
#else
    throw ConfigError(
        "engine 'simgrid' is not built into this binary (install libsimgrid-dev and configure with "
        "-DCOLLSIM_ENABLE_SIMGRID=ON)");
#endif
  }
  if (name == kAutoEngine) {
    throw ConfigError(
        "engine 'auto' is not an engine: resolve it with resolve_engine_name()");
  }
  throw ConfigError(fmt::format("unknown engine '{}' (known: closed_form, replay, simgrid)", name));
}

std::string_view resolve_engine_name(std::string_view name) {
  return name == kAutoEngine ? std::string_view("replay") : name;
}

}  // namespace collsim
