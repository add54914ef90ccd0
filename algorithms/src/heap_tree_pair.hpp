// Two complementary heap-shaped binary trees over the vertices 0..M-1 (the nodes of a cluster:
// stragglar_cluster's ready nodes, nccl_tree's and nvls_tree's nodes), with a slot colour per
// vertex and tree (stragglar_cluster's; the pipelined trees time their steps by themselves).
// Position p of a tree has children 2p+1 and 2p+2; which vertex sits at each position is the
// layout. Both layouts keep what the schedule
// needs: a vertex is inner in at most one tree, siblings have different colours, a vertex's two
// parent edges have different colours, and so do the two roots' edges (both roots hang below one
// vertex outside the trees), so every vertex sends and receives one tree message per slot.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace collsim {

struct HeapTreePair {
  std::array<std::vector<std::uint32_t>, 2> vertex_at;  ///< per tree, position -> vertex
  std::array<std::vector<std::uint8_t>, 2> colour;      ///< per tree, vertex -> slot (0 or 1) of its parent edge
  bool in_order = false;                                ///< which layout (see heap_tree_pair)
};

/// For M >= 2 the in-order layout: tree A numbers its positions in in-order, so every subtree is
/// a contiguous range of vertices (neighbouring nodes share a leaf switch: at 16 nodes per leaf
/// only 20 of the 252 edges of the pair leave a leaf at M = 127, against 223 for the heap
/// layout); tree B walks the same in-order and hands its inner positions A's leaves, in
/// increasing order, so B's inner vertices are A's leaves and its subtrees are near-contiguous
/// too. The colours are a 2-colouring of the constraints above. The heap layout (A the heap over
/// 0..M-1, B over M-1..0; vertex v's edge in tree t has colour (v + 1 + t) mod 2, vertex 0 flipped
/// for an even M) for M < 2, and should a colouring ever fail.
HeapTreePair heap_tree_pair(std::uint32_t vertices);

}  // namespace collsim
