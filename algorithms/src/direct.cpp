// Direct (called "Broadcast" in v2 of the paper): the straggler-aware baseline of Devraj et al.,
// "Accelerating AllReduce with a Persistent Straggler" (arXiv 2505.23523). While the straggler
// S = n-1 is late the n-1 ready ranks run a ring AllReduce among themselves; when it arrives,
// rank 0 and S swap their whole buffers and both add, and the two holders of the result double
// in every round of a whole-buffer broadcast.
//
// One broadcast round (n = 8, round 1; holders so far: r0, S, r1, r2):
//
//     r0 ==> r3     S ==> r4     r1 ==> r5     r2 ==> r6
//
// Phases: "ready_allreduce" (ring ReduceScatter + ring AllGather among ranks 0..n-2 over n-1
// chunks, 2(n-2) rounds; absent for n = 2), "straggler_exchange" (1 round), "broadcast"
// (ceil(log2 n) - 1 rounds). Rounds: 2(n-2) + ceil(log2 n). num_chunks = n-1. One port.
#include <numeric>
#include <vector>

#include "collsim/algorithms/generators.hpp"

namespace collsim {

std::string direct_unsupported(Rank /*n*/) { return {}; }

Schedule generate_direct(const AlgorithmOptions& options) {
  const Rank n = options.n;
  const Rank straggler = n - 1;
  Schedule s;
  s.n = n;
  s.num_chunks = n - 1;

  std::vector<Rank> order(n);  // holders first: 0, S, then 1, 2, ..., n-2
  order[0] = 0;
  order[1] = straggler;
  std::iota(order.begin() + 2, order.end(), Rank{1});

  if (n >= 3) {
    std::vector<Rank> ring(n - 1);  // the ready ranks 0..n-2
    std::iota(ring.begin(), ring.end(), Rank{0});
    Phase& ar = s.add_phase("ready_allreduce");
    append_ring_reduce_scatter(ar, ring, 0);
    append_ring_all_gather(ar, ring, 0);
  }

  Phase& exchange = s.add_phase("straggler_exchange");
  exchange.begin_round();
  exchange.add(0, straggler, 0, s.num_chunks, Op::Reduce);
  exchange.add(straggler, 0, 0, s.num_chunks, Op::Reduce);

  if (n >= 3) {
    Phase& bcast = s.add_phase("broadcast");
    for (Rank holders = 2; holders < n; holders *= 2) {
      bcast.begin_round();
      for (Rank i = 0; i < holders && holders + i < n; ++i) {
        bcast.add(order[i], order[holders + i], 0, s.num_chunks, Op::Copy);
      }
    }
  }
  return s;
}

}  // namespace collsim
