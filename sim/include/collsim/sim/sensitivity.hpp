// How much the model amplifies a tiny change of its inputs: the same run again with every rank's
// arrival moved by at most a picosecond, and how far the finish times then move.
//
// Why: on contended fabrics StragglAR's rounds can turn a 1 ps difference into microseconds
// (docs/performance.md, "Eighth pass"), so its times there are to be read to that precision,
// whatever engine computed them, and two engines that differ only in rounding cannot be held to
// each other more closely. A well-conditioned run moves by about the nudge itself.
#pragma once

#include <cstdint>
#include <vector>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/sim/engine.hpp"

namespace collsim {

/// The largest move of an arrival: far below any real timing noise.
inline constexpr double kSensitivityNudge_s = 1e-12;
/// At most this many moved runs per measurement (each is a whole run).
inline constexpr std::uint64_t kMaxSensitivityRuns = 1000;

struct Sensitivity {
  double relative = 0;    ///< largest |moved - reference| / |reference| over the ranks' finish times
  double absolute_s = 0;  ///< largest |moved - reference|, seconds
  /// The moves grew far past the nudge: the model amplifies differences in this run.
  bool amplified() const { return absolute_s > 100 * kSensitivityNudge_s; }
};

/// Runs `schedule` `runs` times on `engine` with `config`'s arrivals moved by nudged_arrivals
/// (seeds seed * (kMaxSensitivityRuns + 1) + 1 ... + runs, so that no two seeds share a draw) and
/// compares each run's finish times with `reference_finish_s` (the unmoved run's). The engine must
/// take any per-rank arrivals (Engine::takes_any_arrivals); runs <= kMaxSensitivityRuns.
Sensitivity measure_sensitivity(Engine& engine, const Schedule& schedule, RunConfig config,
                                const std::vector<double>& reference_finish_s, std::uint64_t runs, std::uint64_t seed);

}  // namespace collsim
