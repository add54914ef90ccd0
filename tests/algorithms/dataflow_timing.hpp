// A minimal, independent timing of a schedule under the semantics of schedule.hpp on an
// uncontended one-port network, used to check the closed forms of models/closed_form.cpp
// against the schedules the generators actually build (the replay engine is checked against
// the closed forms separately). A transfer of m bytes starts when both endpoints finished their
// previous round, have arrived and (barrier mode) its phase's participants have all arrived; the
// sender is done after alpha + m beta, a reducing receiver m gamma later.
#pragma once

#include <algorithm>
#include <vector>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/models/link_model.hpp"

namespace collsim::testing {

/// Last finish time minus the first arrival, for per-rank arrival times `arrival_s`.
inline double dataflow_time(const Schedule& s, double size_bytes, const LinkModel& link, StartMode start,
                            const std::vector<double>& arrival_s) {
  // Switch ranks (NVLS) arrive at 0; a message to or from one crosses one link direction,
  // alpha/2 + m beta, and the switch adds without a reduction cost.
  std::vector<double> done(arrival_s);
  done.resize(s.num_ranks(), 0.0);
  std::vector<double> ready(done);
  std::vector<std::size_t> seen(s.num_ranks(), static_cast<std::size_t>(-1));
  const double chunk_bytes = size_bytes / s.num_chunks;
  std::size_t round_id = 0;
  for (const Phase& phase : s.phases) {
    double gate = 0;
    if (start == StartMode::Barrier) {
      for (Rank r : participants(phase, s.n)) gate = std::max(gate, arrival_s[r]);
    }
    for (std::size_t r = 0; r < phase.num_rounds(); ++r, ++round_id) {
      for (const Transfer& t : phase.round(r)) {
        for (Rank e : {t.src, t.dst}) {
          if (seen[e] != round_id) {
            ready[e] = done[e];
            seen[e] = round_id;
          }
        }
        const double begin = std::max({ready[t.src], ready[t.dst], gate});
        const double bytes = t.chunk_count * chunk_bytes;
        const bool via_switch = s.is_switch(t.src) || s.is_switch(t.dst);
        const double arrived = begin + (via_switch ? link.latency_s / 2 : link.latency_s) + bytes / link.bandwidth_Bps;
        const bool reduces = t.op == Op::Reduce && !s.is_switch(t.dst);
        done[t.src] = std::max(done[t.src], arrived);
        done[t.dst] = std::max(done[t.dst], reduces ? arrived + bytes * link.gamma_s_per_byte : arrived);
      }
    }
  }
  return *std::max_element(done.begin(), done.end()) - *std::min_element(arrival_s.begin(), arrival_s.end());
}

/// All ranks at 0 except `late`, which arrives at delay_s.
inline std::vector<double> one_late(Rank n, Rank late, double delay_s) {
  std::vector<double> a(n, 0.0);
  a[late] = delay_s;
  return a;
}

}  // namespace collsim::testing
