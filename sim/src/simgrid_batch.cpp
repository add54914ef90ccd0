// The adapter that holds the simgrid engine's only SimGrid internal, and why it exists.
//
// Called from an actor, every s4u setter and start() of an Exec is a simcall of its own: a
// context switch to maestro and back, five per flow. SimGrid 3.32 has no public way to set up
// and start several activities in one simcall; kernel::actor::simcall_answered (simix.hpp) runs
// a piece of code in maestro, where those same s4u calls are plain function calls. With it, a
// worker starts all its queued flows in one switch. Measured on the ring benchmark (README,
// "SimGrid engine"), it is the difference between about 4x and about 1.5x the old engine's time.
//
// Without the hook (COLLSIM_SIMGRID_BATCH_HOOK=OFF, or a SimGrid other than 3.32, whose
// internals may differ) the engine uses the public API only; results are the same.
#include "simgrid_batch.hpp"

#include <simgrid/config.h>
#include <simgrid/version.h>

#if defined(COLLSIM_SIMGRID_BATCH_HOOK) && SIMGRID_VERSION >= 33200 && SIMGRID_VERSION < 33300
#include <simgrid/simix.hpp>
#define COLLSIM_USE_SIMCALL_BATCH 1
#else
#define COLLSIM_USE_SIMCALL_BATCH 0
#endif

namespace collsim::detail {

void run_batched(const std::function<void()>& code) {
#if COLLSIM_USE_SIMCALL_BATCH
  simgrid::kernel::actor::simcall_answered([&code] { code(); });
#else
  code();
#endif
}

bool batched_simcalls() { return COLLSIM_USE_SIMCALL_BATCH != 0; }

}  // namespace collsim::detail
