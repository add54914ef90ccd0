#include "collsim/sim/sensitivity.hpp"

#include <algorithm>
#include <cmath>

#include "collsim/models/arrival.hpp"
#include "collsim/models/error.hpp"
#include "collsim/sim/metrics.hpp"

namespace collsim {

Sensitivity measure_sensitivity(Engine& engine, const Schedule& schedule, RunConfig config,
                                const std::vector<double>& reference_finish_s, std::uint64_t runs, std::uint64_t seed) {
  COLLSIM_ASSERT(runs <= kMaxSensitivityRuns, "too many sensitivity runs");
  COLLSIM_ASSERT(engine.takes_any_arrivals(), "the engine does not take per-rank arrivals");
  Sensitivity s;
  const std::vector<double> arrival_s = config.arrival_s.empty() ? std::vector<double>(schedule.n, 0.0) : config.arrival_s;
  config.record_trace = false;
  for (std::uint64_t k = 1; k <= runs; ++k) {
    config.arrival_s = nudged_arrivals(arrival_s, seed * (kMaxSensitivityRuns + 1) + k, kSensitivityNudge_s);
    const RunResult moved = engine.run(schedule, config);
    s.relative = std::max(s.relative, largest_relative_difference(moved.finish_s, reference_finish_s));
    for (std::size_t r = 0; r < moved.finish_s.size(); ++r) {
      s.absolute_s = std::max(s.absolute_s, std::abs(moved.finish_s[r] - reference_finish_s[r]));
    }
  }
  return s;
}

}  // namespace collsim
