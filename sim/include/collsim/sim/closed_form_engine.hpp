// The closed_form engine: the published alpha-beta formula of the schedule's algorithm
// (models/closed_form.hpp) behind the Engine interface, so the CLI and the sweeps can put it
// next to replay and simgrid.
#pragma once

#include <memory>

#include "collsim/sim/engine.hpp"

namespace collsim {

class ClosedFormEngine final : public Engine {
 public:
  std::string_view name() const override { return "closed_form"; }
  /// Evaluates closed_form_time() for the schedule's algorithm, n, chunking and the
  /// topology's link (alpha, beta, gamma). Arrival times must be all equal except for at most
  /// one later rank (the straggler, whose lateness is the delay d); for a straggler-aware
  /// schedule that rank must be the one the schedule was built for, and in eager mode an
  /// oblivious schedule other than ring needs it to be rank n-1 (the formulas' assumption).
  /// For stragglar the schedule's own completion-phase round count is used. Every rank's finish_s is
  /// set to the common completion time (a formula has no per-rank detail) and transfers to 0.
  /// Throws ConfigError when the config does not fit (see checked_arrivals), the topology is
  /// not a homogeneous any-to-any fabric (nvswitch or full_mesh), or the arrivals are not of
  /// that form; ScheduleError (from closed_form_time) when the algorithm has no formula.
  RunResult run(const Schedule& schedule, const RunConfig& config) override;
};

std::unique_ptr<Engine> make_closed_form_engine();

}  // namespace collsim
