// Pipelined binomial-tree AllReduce: a binomial-tree reduce to rank 0 and a binomial-tree
// broadcast from rank 0, both pipelined over C chunks and overlapped (the root broadcasts chunk
// c while it still receives chunk c+1). The classic MPI tree algorithms (Thakur, Rabenseifner &
// Gropp, IJHPCA 2005) with the segmentation of Open MPI's "pipelined binomial" collectives.
//
// The tree: the parent of rank i > 0 is i minus its lowest set bit; rank i has a child
// i + 2^k for every k below its lowest set bit (rank 0: every k < L = ceil(log2 n)).
// Time is cut into periods of L rounds; in round k of period P, over every tree edge of
// "level" k (parent i, child i + 2^k), the child sends its partial sum of chunk P up and the
// parent sends the finished chunk P - 1 - depth(i) down (depth = popcount). So one rank sends
// and receives at most once per round (one port), a chunk climbs the whole tree within one
// period, and descends one level per period.
//
// One period (n = 8, L = 3), "u" = reduce up (chunk P), "d" = broadcast down:
//
//     round 0:  1->0 u  3->2 u  5->4 u  7->6 u    0->1 d  2->3 d  4->5 d  6->7 d
//     round 1:  2->0 u  6->4 u                    0->2 d  4->6 d
//     round 2:  4->0 u                            0->4 d
//
// One phase, "reduce_broadcast" (the overlap needs both directions in one phase). Rounds
// (empty ones dropped): (C+1) L plus the broadcast tail, L (L-1) / 2 for n a power of two.
// num_chunks = C = pipeline_chunks (default: the table row's default_pipeline_chunks). One port.
#include <algorithm>
#include <bit>
#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

std::string binomial_tree_unsupported(Rank /*n*/) { return {}; }

Schedule generate_binomial_tree(const AlgorithmOptions& options) {
  const Rank n = options.n;
  const std::uint32_t chunks = options.pipeline_chunks;
  COLLSIM_ASSERT(chunks > 0, "generate_schedule() fills in the default pipeline depth");
  const auto levels = static_cast<std::uint32_t>(std::bit_width(n - 1));  // ceil(log2 n)
  Schedule s;
  s.n = n;
  s.num_chunks = chunks;
  Phase& phase = s.add_phase("reduce_broadcast");

  std::vector<Transfer> round;
  // The last broadcast leaves a rank at depth <= levels in period chunks + levels.
  for (std::uint32_t period = 0; period <= chunks + levels; ++period) {
    for (std::uint32_t k = 0; k < levels; ++k) {
      round.clear();
      const Rank step = Rank{1} << k;
      for (Rank parent = 0; parent + step < n; parent += 2 * step) {
        const Rank child = parent + step;
        if (period < chunks) round.push_back({child, parent, period, 1, Op::Reduce});
        const auto depth = static_cast<std::uint32_t>(std::popcount(parent));
        if (period >= 1 + depth && period - 1 - depth < chunks) {
          round.push_back({parent, child, period - 1 - depth, 1, Op::Copy});
        }
      }
      if (round.empty()) continue;
      phase.begin_round();
      for (const Transfer& t : round) phase.add(t.src, t.dst, t.chunk_begin, t.chunk_count, t.op);
    }
  }
  return s;
}

}  // namespace collsim
