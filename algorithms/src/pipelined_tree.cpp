// Step planning of pipelined trees (pipelined_tree.hpp).
#include "pipelined_tree.hpp"

#include <algorithm>
#include <array>

#include "collsim/models/error.hpp"

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

namespace {

// The heap pair: A is the binary heap over nodes 0..N-1, B the same heap over them in reverse
// order; A's inner nodes are the first floor(N/2), B's the last floor(N/2).
std::vector<Rank> heap_parents(std::uint32_t nodes, int tree) {
  std::vector<Rank> parent(nodes, kNoParent);
  const auto node_at = [nodes, tree](std::uint32_t position) { return tree == 0 ? position : nodes - 1 - position; };
  for (std::uint32_t p = 1; p < nodes; ++p) parent[node_at(p)] = node_at((p - 1) / 2);
  return parent;
}

// The in-order pair. Tree A over nodes 1..N-1 is NCCL's in-order binary tree: node r with lowest
// set bit b hangs below r + b when that node exists and has bit 2b clear, else below r - b, so
// every subtree is a contiguous range of nodes and the odd nodes are leaves. Node 0 hangs below
// node N-1. Tree B is A with nodes 0..N-2 shifted by one around their ring (N-1 stays), so B's
// inner nodes are A's leaves. Neighbouring nodes share a leaf switch: most edges stay below one
// leaf, where the heap's edges from node p to 2p+1 and 2p+2 leave it from p = 8 on at 16 nodes
// per leaf (224 of the 254 edges of the pair at 128 nodes, against 32 here).
std::vector<Rank> in_order_parents(std::uint32_t nodes, int tree) {
  std::vector<Rank> parent(nodes, kNoParent);
  const auto node_at = [nodes, tree](std::uint32_t r) { return tree == 0 || r == nodes - 1 ? r : (r + 1) % (nodes - 1); };
  for (std::uint32_t r = 1; r < nodes; ++r) {
    const std::uint32_t b = r & (~r + 1);
    std::uint32_t up = (r ^ b) | (b << 1);
    if (up >= nodes) up = r ^ b;
    if (up != 0) parent[node_at(r)] = node_at(up);  // up = 0: r is the root of 1..N-1
  }
  parent[node_at(0)] = node_at(nodes - 1);
  return parent;
}

// Whether the in-order pair may replace the heap pair: each a tree with one root, no node
// receiving from more than two children over both trees (one chunk per NIC and step, as the
// heap pair), and no longer to fill than the heap (depth and first root send; at N = 2^k the
// two are equal, elsewhere the pair is a level deeper or invalid, and the heap stays).
bool in_order_pair_fits(std::uint32_t nodes) {
  std::array<std::vector<Rank>, 2> pair{in_order_parents(nodes, 0), in_order_parents(nodes, 1)};
  std::vector<std::uint32_t> children(nodes, 0);
  for (const auto& parent : pair) {
    if (std::count(parent.begin(), parent.end(), kNoParent) != 1) return false;
    for (const Rank p : parent) {
      if (p != kNoParent && ++children[p] > 2) return false;
    }
  }
  for (int t = 0; t < 2; ++t) {
    const PipelinedTree mine = plan_pipelined_tree(pair[t]);
    const PipelinedTree heap = plan_pipelined_tree(heap_parents(nodes, t));
    if (mine.max_depth > heap.max_depth || mine.root_start > heap.root_start) return false;
  }
  return true;
}

}  // namespace

std::vector<Rank> double_binary_tree_node_parents(std::uint32_t nodes, int tree) {
  if (nodes >= 4 && in_order_pair_fits(nodes)) return in_order_parents(nodes, tree);
  return heap_parents(nodes, tree);
}

}  // namespace collsim
