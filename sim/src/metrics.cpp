#include "collsim/sim/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "collsim/models/collective.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

RunMetrics compute_metrics(const RunResult& result, const std::vector<double>& arrival_s,
                           double size_bytes, Rank n) {
  RunMetrics m;
  if (result.time_after_last_arrival_s > 0) {
    m.algbw_GBps = size_bytes / result.time_after_last_arrival_s / 1e9;
    m.busbw_GBps = m.algbw_GBps * bus_factor(Collective::AllReduce, n);
  }
  if (result.trace.empty()) return m;
  // Busy time is the union of a rank's transfer intervals: a full-duplex rank that sends and
  // receives at once is busy once, not twice.
  std::vector<std::vector<std::pair<double, double>>> intervals(n);
  for (const auto& rec : result.trace) {
    // Ranks >= n are switch ranks (NVLS): not GPUs, no busy time reported.
    for (const Rank r : {rec.transfer.src, rec.transfer.dst}) {
      if (r < n) intervals[r].emplace_back(rec.start_s, rec.end_s);
    }
  }
  m.busy_s.assign(n, 0.0);
  m.idle_s.assign(n, 0.0);
  for (Rank r = 0; r < n; ++r) {
    auto& iv = intervals[r];
    std::sort(iv.begin(), iv.end());
    double busy = 0, cur_begin = 0, cur_end = -1;
    for (const auto& [b, e] : iv) {
      if (b > cur_end) {
        if (cur_end > cur_begin) busy += cur_end - cur_begin;
        cur_begin = b;
        cur_end = e;
      } else {
        cur_end = std::max(cur_end, e);
      }
    }
    if (cur_end > cur_begin) busy += cur_end - cur_begin;
    const double arrival = arrival_s.empty() ? 0.0 : arrival_s[r];
    const double finish = r < result.finish_s.size() ? result.finish_s[r] : arrival;
    m.busy_s[r] = busy;
    m.idle_s[r] = std::max(0.0, finish - arrival - busy);
  }
  return m;
}

double hidden_delay_fraction(double time_no_delay_s, double time_with_delay_s, double delay_s) {
  if (delay_s <= 0) return 0.0;
  const double fraction = (time_no_delay_s + delay_s - time_with_delay_s) / delay_s;
  // Rounding in the two completion times must not show up as "-7e-16 of the delay hidden".
  constexpr double kNoise = 1e-12;
  return std::abs(fraction) < kNoise ? 0.0 : fraction;
}

double largest_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  COLLSIM_ASSERT(a.size() == b.size(), "finish times of runs of different sizes");
  double worst = 0;
  for (std::size_t r = 0; r < a.size(); ++r) {
    const double diff = std::abs(a[r] - b[r]);
    worst = std::max(worst, b[r] != 0 ? diff / std::abs(b[r]) : diff);
  }
  return worst;
}

}  // namespace collsim
