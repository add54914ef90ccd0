// Step planning of pipelined trees (pipelined_tree.hpp).
#include "pipelined_tree.hpp"

#include <algorithm>

#include "collsim/models/error.hpp"
#include "heap_tree_pair.hpp"

namespace collsim {

PipelinedTree plan_pipelined_tree(std::vector<Rank> parent) {
  PipelinedTree tree;
  tree.parent = std::move(parent);
  const auto n = static_cast<Rank>(tree.parent.size());
  // Depths by walking to the root (a double binary tree is about log2 N deep, a chain G long);
  // start steps from the deepest vertex up, so every child is final before its parent.
  tree.depth.assign(n, 0);
  for (Rank r = 0; r < n; ++r) {
    for (Rank q = r; tree.parent[q] != kNoParent; q = tree.parent[q]) {
      ++tree.depth[r];
      COLLSIM_ASSERT(tree.depth[r] <= n, "plan_pipelined_tree: the parents form a cycle");
    }
  }
  std::vector<Rank> by_depth(n);
  for (Rank r = 0; r < n; ++r) by_depth[r] = r;
  std::stable_sort(by_depth.begin(), by_depth.end(), [&](Rank a, Rank b) { return tree.depth[a] > tree.depth[b]; });
  std::vector<std::vector<Rank>> children(n);
  for (const Rank r : by_depth) {
    if (tree.parent[r] != kNoParent) children[tree.parent[r]].push_back(r);
  }
  tree.start.assign(n, 0);
  for (const Rank r : by_depth) {
    std::vector<Rank>& kids = children[r];
    std::sort(kids.begin(), kids.end(), [&](Rank a, Rank b) { return tree.start[a] < tree.start[b]; });
    std::uint32_t next = 0;
    for (const Rank k : kids) {
      tree.start[k] = std::max(tree.start[k], next);
      next = tree.start[k] + 1;
    }
    tree.start[r] = next;
    if (tree.parent[r] == kNoParent) tree.root_start = next;
  }
  tree.max_depth = n == 0 ? 0 : *std::max_element(tree.depth.begin(), tree.depth.end());
  return tree;
}

// The heap shape fills the pipeline soonest; NCCL's own in-order tree (node 0 the root of one
// chain) starts its root a step later, which cost 1.5 % on a 1:1 cluster at 1,024 GPUs.
std::vector<Rank> double_binary_tree_node_parents(std::uint32_t nodes, int tree) {
  const HeapTreePair pair = heap_tree_pair(nodes);
  std::vector<Rank> parent(nodes, kNoParent);
  const auto& at = pair.vertex_at[static_cast<std::size_t>(tree)];
  for (std::uint32_t p = 1; p < nodes; ++p) parent[at[p]] = at[(p - 1) / 2];
  return parent;
}

}  // namespace collsim
