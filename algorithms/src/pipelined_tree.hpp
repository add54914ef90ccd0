// The pipelined reduce-up / broadcast-down timing of a tree, shared by nccl_tree and nvls_tree:
// both run NCCL's double binary tree across the nodes (Sanders, Speck & Traeff, Parallel
// Computing 2009) in steps, one chunk per step and edge.
//
// Over the vertices of a tree given by its parents (a vertex is a rank for nccl_tree, a node for
// nvls_tree), chunk j leaves vertex v for its parent in step j + start(v). A leaf starts at 0; an
// inner vertex one step after its last child, where siblings get distinct start steps (two
// children must not add the same chunk into their parent in one step), each as early as its own
// subtree allows. The root, with R = start(root), holds chunk j reduced after step j + R - 1; the
// parent of a vertex at depth d sends it chunk j in step j + R + d - 1, so a vertex at depth d
// holds chunk j complete after step j + R + d - 1.
#pragma once

#include <cstdint>
#include <vector>

#include "collsim/algorithms/schedule.hpp"

namespace collsim {

inline constexpr Rank kNoParent = 0xFFFFFFFFu;

struct PipelinedTree {
  std::vector<Rank> parent;          ///< per vertex, kNoParent at the root
  std::vector<std::uint32_t> start;  ///< step of a vertex's first send up
  std::vector<std::uint32_t> depth;  ///< edges to the root
  std::uint32_t root_start = 0;      ///< R: the root holds chunk 0 reduced after step R - 1
  std::uint32_t max_depth = 0;

  /// The step in which vertex v (not the root) sends chunk j up.
  std::uint32_t up_step(Rank v, std::uint32_t j) const { return j + start[v]; }
  /// The step in which v's parent sends chunk j down to v (v not the root).
  std::uint32_t down_step(Rank v, std::uint32_t j) const { return j + root_start + depth[parent[v]]; }
  /// The first step in which v holds chunk j complete (reduced over the whole tree).
  std::uint32_t complete_from(Rank v, std::uint32_t j) const { return j + root_start + depth[v]; }
};

/// Depths and start steps of the tree given by `parent` (exactly one kNoParent, no cycles).
PipelinedTree plan_pipelined_tree(std::vector<Rank> parent);

/// Parent node of every node in tree `tree` (0 = A, 1 = B) of the double binary tree over
/// `nodes` nodes: two binary heaps (position p has children 2p+1 and 2p+2) in the in-order layout
/// of heap_tree_pair.hpp, so a node is inner in at most one of them (one chunk per NIC and
/// step) and every subtree is a run of neighbouring nodes, which share a leaf switch. The heap
/// over nodes 0..N-1 and its mirror, used before, have the same shape but sent most edges across
/// the spine (224 of 254 at 128 nodes, 16 per leaf).
std::vector<Rank> double_binary_tree_node_parents(std::uint32_t nodes, int tree);

}  // namespace collsim
