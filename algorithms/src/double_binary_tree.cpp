// Double binary tree AllReduce, NCCL's tree algorithm: two binary trees, each reducing and then
// broadcasting half of the buffer, pipelined over C chunks per tree. Every rank is an inner node
// of at most one tree, so the two halves together use each rank's links about evenly.
// P. Sanders, J. Speck & J. L. Traeff, "Two-tree algorithms for full bandwidth broadcast,
// reduction and scan" (Parallel Computing 2009); NCCL 2.4 (Jeaugey, 2019).
//
// The trees: tree A is the binary heap over ranks 0, 1, ..., n-1 (position p has children 2p+1
// and 2p+2), tree B the same heap over the ranks in reverse order (position p holds rank n-1-p).
// The inner ranks of A are the first floor(n/2), those of B the last floor(n/2): disjoint.
//
// Periods of 4 rounds: rounds 0 and 1 carry reduce messages up, rounds 2 and 3 broadcast
// messages down. Every non-root heap edge has a colour 0/1: siblings differ, and so do the two
// edges (one per tree) to the parents of one rank; an edge of colour c is used up in round c and
// down in round 2 + c. Hence a rank sends and receives at most one message per round (one port)
// although it works in two trees. Colours: in A left children (odd p) 0, right children 1; in B
// position p gets 1 when n-1-p is odd, else 0.
// A rank of height h (leaves 0) sends chunk P - h up in period P; the root, of height H, starts
// broadcasting chunk c in period c + H - 1 (after its children's messages in rounds 0 and 1) and
// a rank at depth d sends it on in period c + H - 1 + d.
//
// One steady period, n = 4 (A: 0 over 1, 2; 1 over 3.  B: 3 over 2, 1; 2 over 0):
//
//     round 0:  3->1 (A)  1->0 (A)   2->3 (B)  0->2 (B)      up, colour 0
//     round 1:  2->0 (A)             1->3 (B)                up, colour 1
//     round 2:  1->3 (A)  0->1 (A)   3->2 (B)  2->0 (B)      down, colour 0
//     round 3:  0->2 (A)             3->1 (B)                down, colour 1
//
// One phase, "reduce_broadcast". num_chunks = pipeline_chunks (default: the table row's
// default_pipeline_chunks), which must be even: tree A carries chunks 0..C-1 and tree B chunks C..2C-1, C = num_chunks / 2.
// Empty rounds are dropped. One port.
#include <fmt/format.h>

#include <bit>
#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

namespace collsim {
namespace {

std::uint32_t heap_depth(Rank p) { return static_cast<std::uint32_t>(std::bit_width(p + 1)) - 1; }

// Levels below position p: the leftmost path is the longest in a heap.
std::uint32_t heap_height(Rank p, Rank n) {
  std::uint32_t h = 0;
  for (std::uint64_t q = p; 2 * q + 1 < n; q = 2 * q + 1) ++h;
  return h;
}

}  // namespace

std::string double_binary_tree_unsupported(Rank /*n*/) { return {}; }

Schedule generate_double_binary_tree(const AlgorithmOptions& options) {
  const Rank n = options.n;
  const std::uint32_t total = options.pipeline_chunks;
  COLLSIM_ASSERT(total > 0 && total % 2 == 0, "generate_schedule() gives an even pipeline depth (table row)");
  const std::uint32_t chunks = total / 2;
  const std::uint32_t root_height = heap_height(0, n);
  std::vector<std::uint32_t> height(n);
  for (Rank p = 0; p < n; ++p) height[p] = heap_height(p, n);

  Schedule s;
  s.n = n;
  s.num_chunks = total;
  Phase& phase = s.add_phase("reduce_broadcast");

  auto rank_of = [n](int tree, Rank p) { return tree == 0 ? p : n - 1 - p; };
  auto colour = [n](int tree, Rank p) -> std::uint32_t {
    return tree == 0 ? (p % 2 == 1 ? 0u : 1u) : ((n - 1 - p) % 2 == 1 ? 1u : 0u);
  };

  std::vector<Transfer> round;
  // The last broadcast leaves a rank at depth <= root_height - 1 in period chunks + 2 H - 3.
  const std::uint32_t periods = chunks + 2 * root_height;
  for (std::uint32_t period = 0; period < periods; ++period) {
    for (std::uint32_t slot = 0; slot < 4; ++slot) {
      round.clear();
      for (int tree = 0; tree < 2; ++tree) {
        const std::uint32_t offset = tree == 0 ? 0 : chunks;
        for (Rank p = 1; p < n; ++p) {
          if (colour(tree, p) != slot % 2) continue;
          const Rank parent = (p - 1) / 2;
          if (slot < 2) {
            if (period >= height[p] && period - height[p] < chunks) {
              round.push_back({rank_of(tree, p), rank_of(tree, parent), offset + period - height[p], 1, Op::Reduce});
            }
          } else {
            const std::uint32_t lag = root_height - 1 + heap_depth(parent);
            if (period >= lag && period - lag < chunks) {
              round.push_back({rank_of(tree, parent), rank_of(tree, p), offset + period - lag, 1, Op::Copy});
            }
          }
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
