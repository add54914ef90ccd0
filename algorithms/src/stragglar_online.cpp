// stragglar_online: StragglAR whose late ranks are found when the collective runs, not when the
// schedule is built. The StragglAR construction is Devraj, Ding, Vijaya Kumar, Kleinberg, Singh,
// "Accelerating AllReduce with a Persistent Straggler" (arXiv 2505.23523, 2025); the run-time
// choice and the k-late generalisation are collsim's (docs/stragglar_online.md).
//
// The schedule is built for k late ranks at labels m..n-1 (m = n - k) arriving in that order;
// the engines' common entry relabels it for the ranks that actually come last
// (sim/src/execution_core.hpp, plan_run). The buffer is cut into m chunks, early rank g owns
// chunk g:
//   reduce_scatter   ring ReduceScatter among the m first arrivals (m - 1 rounds)
//   fold_j           (j < k - 1) late rank m + j adds chunk g into owner g, g = 0..m-1
//   completion       StragglAR's completion rounds for the m + 1 ranks 0..m-1 and n-1
//   deliver          (k > 1) the earlier late ranks get the whole result, doubling
// For k = 1 this is exactly the `stragglar` schedule. A fold round, late rank 5 (m = 4):
//
//     fold_0 round 2:   5 --> 2  c2 (reduce)       ranks 0, 1, 3 idle or in other phases
#include <fmt/format.h>

#include <numeric>
#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

std::string stragglar_online_unsupported(Rank /*n*/) { return {}; }

Schedule generate_stragglar_online(const AlgorithmOptions& options) {
  const Rank n = options.n;
  const std::uint32_t k = options.late_ranks;
  if (n < 2) throw ScheduleError(fmt::format("stragglar_online: n = {} is not supported (n must be at least 2)", n));
  if (k < 1 || k >= n) {
    throw ScheduleError(fmt::format("stragglar_online: late_ranks = {} is out of range for n = {} (valid: 1..{})", k,
                                    n, n - 1));
  }
  const Rank m = n - k;
  if (m > 0xFFFF) {
    throw ScheduleError(fmt::format(
        "stragglar_online: {} early ranks give {} chunks; a whole-buffer transfer holds at most 65535", m, m));
  }
  // The early ranks and the last late rank run plain StragglAR over m chunks; its straggler
  // label m becomes n-1, the last arrival.
  AlgorithmOptions inner;
  inner.n = m + 1;
  Schedule base = generate_stragglar(inner);
  std::vector<Rank> to_outer(m + 1);
  std::iota(to_outer.begin(), to_outer.end(), Rank{0});
  to_outer[m] = n - 1;

  Schedule s;
  s.n = n;
  s.num_chunks = m;
  s.straggler = n - 1;
  s.late_ranks = k;
  s.phases.push_back(std::move(base.phases[0]));  // reduce_scatter among 0..m-1: no relabel needed
  for (std::uint32_t j = 0; j + 1 < k; ++j) {
    Phase& fold = s.add_phase(fmt::format("fold_{}", j));
    for (Rank g = 0; g < m; ++g) {
      fold.begin_round();
      fold.add(m + j, g, g, 1, Op::Reduce);
    }
  }
  Phase& completion = s.phases.emplace_back(std::move(base.phases[1]));
  completion.relabel(to_outer);
  if (k > 1) {
    // Whole-buffer copies from every rank holding the result to one waiting late rank each, so
    // the holders double every round (one round while k - 1 <= m + 1).
    Phase& deliver = s.add_phase("deliver");
    std::vector<Rank> holders(m);
    std::iota(holders.begin(), holders.end(), Rank{0});
    holders.push_back(n - 1);
    Rank next = m;
    while (next < n - 1) {
      deliver.begin_round();
      const std::size_t senders = holders.size();
      for (std::size_t i = 0; i < senders && next < n - 1; ++i, ++next) {
        deliver.add(holders[i], next, 0, m, Op::Copy);
        holders.push_back(next);
      }
    }
  }
  return s;
}

}  // namespace collsim
