// The simgrid engine's one use of a SimGrid internal (private to sim/; see simgrid_batch.cpp).
#pragma once

#include <functional>

namespace collsim::detail {

/// Runs `code`, which must only make non-blocking s4u calls, as one step of SimGrid's maestro
/// when the SimGrid hook is built in (batched_simcalls()), else as a plain call from the actor.
void run_batched(const std::function<void()>& code);

/// Whether run_batched runs its code as one simcall (SimGrid 3.32 with the hook enabled).
bool batched_simcalls();

}  // namespace collsim::detail
