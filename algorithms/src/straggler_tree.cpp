// Straggler tree: the tree baseline the reviewers of Devraj et al., "Accelerating AllReduce with
// a Persistent Straggler" (arXiv 2505.23523) asked for, a pipelined tree AllReduce in which the
// straggler S = n-1 joins as late as possible. The n-1 ready ranks first reduce the buffer up a
// binary tree to rank 0 (pipelined over C chunks, as NCCL's tree does) while S is late; S then
// swaps each chunk with rank 0 (both add, so both hold the result) and the two of them feed a
// pipelined binary-tree broadcast: rank 0 sends to rank 1, S to rank 2, and every rank p below
// forwards to 2p+1 and 2p+2 (the heap order of the ready ranks).
//
// Reduce ("ready_reduce"): periods of 2 rounds; in round 0 every left child (odd p) sends up, in
// round 1 every right child (even p). A rank at depth h sends chunk P - (D - h) in period P,
// D being the depth of the deepest ready rank, so a chunk climbs one level per period.
// Join and broadcast ("straggler_join_broadcast"), period Q, two rounds (n = 7, ready 0..5):
//
//     round 0:  0 <-> S chunk Q (both add)     1 -> 3   2 -> 5     (chunk Q - 1)
//     round 1:  0 -> 1 chunk Q   S -> 2 chunk Q   1 -> 4             (chunk Q - 1)
//
// A rank at depth h >= 1 forwards chunk Q - h in period Q. Every rank sends and receives at most
// once per round (one port); S sends two messages per chunk, as rank 0 and every inner rank.
// Rounds (empty ones dropped; D = depth of the last ready rank, Dr = depth of the deepest right
// child, Dl / Dr' = depth of the deepest rank below the root with a left / right child):
// reduce (C + D - 1) + (C + Dr - 1, or 0 without right children), join 2C + Dl + Dr';
// n = 2 is just C exchange rounds. num_chunks = C = pipeline_chunks (default: the
// table row's default_pipeline_chunks).
#include <bit>
#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

namespace collsim {
namespace {

std::uint32_t heap_depth(Rank p) { return static_cast<std::uint32_t>(std::bit_width(p + 1)) - 1; }

// Appends `round` as a new round of `phase` unless it is empty.
void flush(Phase& phase, const std::vector<Transfer>& round) {
  if (round.empty()) return;
  phase.begin_round();
  for (const Transfer& t : round) phase.add(t.src, t.dst, t.chunk_begin, t.chunk_count, t.op);
}

}  // namespace

std::string straggler_tree_unsupported(Rank /*n*/) { return {}; }

Schedule generate_straggler_tree(const AlgorithmOptions& options) {
  const Rank n = options.n;
  const Rank straggler = n - 1;
  const Rank ready = n - 1;  // ranks 0..ready-1 form the heap
  const std::uint32_t chunks = options.pipeline_chunks;
  COLLSIM_ASSERT(chunks > 0, "generate_schedule() fills in the default pipeline depth");
  const std::uint32_t deepest = heap_depth(ready - 1);
  Schedule s;
  s.n = n;
  s.num_chunks = chunks;
  std::vector<Transfer> round;

  if (ready >= 2) {
    Phase& reduce = s.add_phase("ready_reduce");
    for (std::uint32_t period = 0; period + 1 < chunks + deepest; ++period) {
      for (Rank side = 0; side < 2; ++side) {  // 0: left children (odd p), 1: right children
        round.clear();
        for (Rank p = 1 + side; p < ready; p += 2) {
          const std::uint32_t lag = deepest - heap_depth(p);
          if (period >= lag && period - lag < chunks) {
            round.push_back({p, (p - 1) / 2, period - lag, 1, Op::Reduce});
          }
        }
        flush(reduce, round);
      }
    }
  }

  Phase& join = s.add_phase("straggler_join_broadcast");
  for (std::uint32_t period = 0; period < chunks + deepest; ++period) {
    for (Rank side = 0; side < 2; ++side) {
      round.clear();
      if (period < chunks) {
        if (side == 0) {
          round.push_back({0, straggler, period, 1, Op::Reduce});
          round.push_back({straggler, 0, period, 1, Op::Reduce});
        } else {
          if (ready >= 2) round.push_back({0, 1, period, 1, Op::Copy});
          if (ready >= 3) round.push_back({straggler, 2, period, 1, Op::Copy});
        }
      }
      for (Rank p = 1; 2 * p + 1 + side < ready; ++p) {
        const std::uint32_t depth = heap_depth(p);
        if (period >= depth && period - depth < chunks) {
          round.push_back({p, 2 * p + 1 + side, period - depth, 1, Op::Copy});
        }
      }
      flush(join, round);
    }
  }
  return s;
}

}  // namespace collsim
