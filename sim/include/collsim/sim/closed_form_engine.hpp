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
  bool takes_any_arrivals() const override { return false; }
  /// Evaluates the closed form of the schedule's algorithm (its table row's closed_form) for
  /// the schedule's n, pipeline depth (pipelined rows) and round count, and the topology's link
  /// (alpha, beta, gamma). Arrival times must be all equal except for at most one later rank
  /// (the straggler, whose lateness is the delay d); for a straggler-aware schedule that rank
  /// must be the one the schedule was built for, and in eager mode an oblivious schedule whose
  /// row does not say closed_form_any_late_rank needs it to be rank n-1 (the formulas'
  /// assumption). Every rank's finish_s is set to the common completion time (a formula has no
  /// per-rank detail) and transfers to 0.
  /// Throws ConfigError when the config does not fit (see checked_arrivals), the topology is
  /// not a homogeneous any-to-any fabric (nvswitch or full_mesh), the arrivals are not of that
  /// form, or the algorithm is unknown; ScheduleError when its row has no closed form or the
  /// formula rejects the schedule.
  RunResult run(const Schedule& schedule, const RunConfig& config) override;
};

std::unique_ptr<Engine> make_closed_form_engine();

}  // namespace collsim
