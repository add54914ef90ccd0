// The SimGrid side of the simgrid engine (private to sim/). Runs inside the forked child.
#pragma once

#include <span>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/sim/engine.hpp"

namespace collsim::detail {

/// Executes `schedule` on a SimGrid platform built from config.topology and returns finish_s
/// (per rank), transfers and, if config.record_trace, the trace; the summary fields are left
/// to the caller. `arrival_s` (per rank) and `gate_s` (per phase, the barrier-mode start
/// gates, 0 in eager mode) come from run_checks.hpp. Preconditions: the config and every
/// transfer were validated, and no s4u::Engine was ever created in this process (SimGrid 3.32
/// supports one per process: call this in a fresh child). Throws InternalError if the
/// simulation does not complete every transfer or the schedule has 2^32 transfers or more.
RunResult simulate_with_simgrid(const Schedule& schedule, const RunConfig& config, std::span<const double> arrival_s,
                                std::span<const double> gate_s);

}  // namespace collsim::detail
