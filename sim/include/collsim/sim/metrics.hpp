// Metrics derived from a RunResult: per-rank idle time, hidden delay, nccl-tests bandwidths.
#pragma once

#include <vector>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/sim/engine.hpp"

namespace collsim {

struct RunMetrics {
  std::vector<double> busy_s;   ///< per rank: time with at least one own transfer in flight
  std::vector<double> idle_s;   ///< per rank: (finish - arrival) - busy
  double algbw_GBps = 0;        ///< size / time_after_last_arrival_s, in 1e9 B/s (nccl-tests)
  double busbw_GBps = 0;        ///< algbw * 2(n-1)/n (nccl-tests all_reduce convention)
};

/// Computes the metrics of `result` (which must hold a trace for busy/idle; without one they
/// are left empty). `arrival_s` as given to the engine (empty = all 0).
/// Bandwidths use the time after the last arrival, as the StragglAR paper reports s / (t - d).
RunMetrics compute_metrics(const RunResult& result, const std::vector<double>& arrival_s,
                           double size_bytes, Rank n);

/// Share of the straggler delay that an algorithm hides: (T_no_delay + d - T_delay) / d, where
/// d = last arrival - first arrival. 1 = the delay costs nothing, 0 = it adds fully to the
/// completion time. Returns 0 when d == 0.
double hidden_delay_fraction(double time_no_delay_s, double time_with_delay_s, double delay_s);

/// The largest |a[r] - b[r]| / |b[r]| over the ranks (a difference from a zero b[r] counts whole):
/// how far two runs' finish times are apart. Both must have the same size.
double largest_relative_difference(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace collsim
