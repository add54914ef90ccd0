// NCCL's tree AllReduce across nodes: a chain over NVLink inside every node, a double binary
// tree across the nodes, reduce up and broadcast down, pipelined in chunks (Sanders, Speck &
// Traeff, Parallel Computing 2009, for the two trees; NCCL 2.4, Jeaugey 2019, for the chains and
// one tree pair per channel).
//
// n = N nodes x G GPUs per node, rank = node * G + local. As NCCL spreads its tree channels over
// the NIC rails, there are G channels and two trees (A and B) per channel, 2 G trees in all.
// Channel c carries slice c of the buffer, cut into P = pipeline_chunks chunks (even, as for
// double_binary_tree): tree (c, t) carries C = P / 2 of them, chunks [(2 c + t) C, (2 c + t + 1) C),
// and num_chunks = G P.
//
// Tree (c, t) over all n ranks:
//  * across nodes, on rail c: the two trees of double_binary_tree_node_parents (pipelined_tree.hpp:
//    binary heaps numbered in order, so neighbouring nodes, which share a leaf switch, form the
//    subtrees), a node inner in at most one of the two. The edges join the nodes' heads, GPU c of each node:
//    every NIC hop of channel c is on rail c.
//  * inside node k, a chain from the head down: k*G+c <- k*G+c+1 <- ... <- k*G+c+G-1 (mod G),
//    each GPU the parent of the next, so the chain's tail is a leaf.
//
//     node tree A, N = 3:     node 0          chain of node 0, G = 4, c = 1:
//                            /      \          1 <- 2 <- 3 <- 0   (head 1 talks to the other nodes)
//                        node 1   node 2
//
// Pipelining (steps = rounds of the one phase "reduce_broadcast"): rank v sends chunk j of its
// tree up in round j + start(v). A leaf starts at 0; an inner rank one round after its last
// child, where siblings get distinct start rounds (two children must not add the same chunk
// into their parent in one round), each as early as its own subtree allows. The root, with
// R = start(root), holds chunk j reduced after round j + R - 1, and a rank at depth d sends it
// down to its children in round j + R + d. All 2 G trees run in the same rounds, so a
// rank sends and receives several messages per round; `ports` is the largest such count.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"
#include "pipelined_tree.hpp"

namespace collsim {

namespace {

// Parent of every rank in tree (channel, tree) as described in the header; kNoParent at the root.
std::vector<Rank> tree_parents(std::uint32_t nodes, std::uint32_t g, std::uint32_t channel, int tree) {
  std::vector<Rank> parent(static_cast<std::size_t>(nodes) * g, kNoParent);
  const std::vector<Rank> node_parent = double_binary_tree_node_parents(nodes, tree);
  for (std::uint32_t node = 0; node < nodes; ++node) {
    if (node_parent[node] != kNoParent) parent[node * g + channel] = node_parent[node] * g + channel;
    for (std::uint32_t i = 1; i < g; ++i) {
      parent[node * g + (channel + i) % g] = node * g + (channel + i - 1) % g;
    }
  }
  return parent;
}

}  // namespace

Schedule generate_nccl_tree(const AlgorithmOptions& options) {
  const Rank n = options.n;
  const std::uint32_t g = options.gpus_per_node;
  if (const std::string why = hierarchical_unsupported(n, g); !why.empty()) {
    throw ScheduleError(fmt::format("nccl_tree: n = {} is not supported: {}", n, why));
  }
  const std::uint32_t per_slice = options.pipeline_chunks;
  COLLSIM_ASSERT(per_slice > 0 && per_slice % 2 == 0, "generate_schedule() gives an even pipeline depth (table row)");
  if (static_cast<std::uint64_t>(per_slice) * g > 0xFFFFFFu) {
    throw ScheduleError(fmt::format(
        "nccl_tree: pipeline_chunks = {} with {} GPUs per node gives more than 2^24 chunks", per_slice, g));
  }
  const std::uint32_t chunks = per_slice / 2;
  const std::uint32_t nodes = n / g;

  struct Tree {
    PipelinedTree plan;
    std::uint32_t offset = 0;
  };
  std::vector<Tree> trees;
  std::uint32_t rounds = 0;
  for (std::uint32_t c = 0; c < g; ++c) {
    for (int t = 0; t < 2; ++t) {
      Tree tree{plan_pipelined_tree(tree_parents(nodes, g, c, t)), (2 * c + static_cast<std::uint32_t>(t)) * chunks};
      // The last broadcast leaves a rank at depth max_depth - 1 in round C - 1 + R + max_depth - 1.
      rounds = std::max(rounds, chunks + tree.plan.root_start + tree.plan.max_depth - 1);
      trees.push_back(std::move(tree));
    }
  }

  Schedule s;
  s.n = n;
  s.num_chunks = 2 * g * chunks;
  Phase& phase = s.add_phase("reduce_broadcast");
  std::vector<std::uint32_t> sends(n), receives(n);
  std::uint32_t ports = 1;
  for (std::uint32_t round = 0; round < rounds; ++round) {
    phase.begin_round();
    std::fill(sends.begin(), sends.end(), 0);
    std::fill(receives.begin(), receives.end(), 0);
    for (const Tree& tree : trees) {
      const PipelinedTree& plan = tree.plan;
      for (Rank r = 0; r < n; ++r) {
        const Rank up = plan.parent[r];
        if (up == kNoParent) continue;
        if (round >= plan.up_step(r, 0) && round - plan.up_step(r, 0) < chunks) {
          phase.add(r, up, tree.offset + round - plan.up_step(r, 0), 1, Op::Reduce);
          ++sends[r];
          ++receives[up];
        }
        if (round >= plan.down_step(r, 0) && round - plan.down_step(r, 0) < chunks) {
          phase.add(up, r, tree.offset + round - plan.down_step(r, 0), 1, Op::Copy);
          ++sends[up];
          ++receives[r];
        }
      }
    }
    for (Rank r = 0; r < n; ++r) ports = std::max({ports, sends[r], receives[r]});
  }
  s.ports = ports;
  return s;
}

}  // namespace collsim
