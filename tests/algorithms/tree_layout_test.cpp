// Where the nodes sit in the double binary trees across nodes: heap_tree_pair (stragglar_cluster)
// and double_binary_tree_node_parents (nccl_tree, nvls_tree, built on it). Both must keep every
// NIC at one chunk per step and most edges below one leaf switch.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "heap_tree_pair.hpp"
#include "pipelined_tree.hpp"

namespace collsim {
namespace {

constexpr std::uint32_t kNodesPerLeaf = 16;

bool crosses(std::uint32_t a, std::uint32_t b) { return a / kNodesPerLeaf != b / kNodesPerLeaf; }

void expect_valid_pair(const HeapTreePair& pair, std::uint32_t m) {
  std::vector<int> inner(m, 0);
  for (int t = 0; t < 2; ++t) {
    std::vector<std::uint32_t> sorted = pair.vertex_at[t];
    std::sort(sorted.begin(), sorted.end());
    for (std::uint32_t v = 0; v < m; ++v) ASSERT_EQ(sorted[v], v) << "tree " << t << " is not a permutation, m = " << m;
    for (std::uint64_t p = 0; 2 * p + 1 < m; ++p) {
      ++inner[pair.vertex_at[t][p]];
      if (2 * p + 2 < m) {
        EXPECT_NE(pair.colour[t][pair.vertex_at[t][2 * p + 1]], pair.colour[t][pair.vertex_at[t][2 * p + 2]])
            << "siblings share a slot, m = " << m << ", tree " << t << ", position " << p;
      }
    }
  }
  for (std::uint32_t v = 0; v < m; ++v) {
    EXPECT_LE(inner[v], 1) << "vertex " << v << " is inner in both trees, m = " << m;
    EXPECT_NE(pair.colour[0][v], pair.colour[1][v]) << "vertex " << v << " sends twice in one slot, m = " << m;
  }
  if (m >= 1) {
    EXPECT_NE(pair.colour[0][pair.vertex_at[0][0]], pair.colour[1][pair.vertex_at[1][0]]) << "roots, m = " << m;
  }
}

std::uint32_t crossings(const HeapTreePair& pair, std::uint32_t m) {
  std::uint32_t count = 0;
  for (int t = 0; t < 2; ++t) {
    for (std::uint32_t p = 1; p < m; ++p) count += crosses(pair.vertex_at[t][p], pair.vertex_at[t][(p - 1) / 2]) ? 1 : 0;
  }
  return count;
}

TEST(HeapTreePair, EveryLayoutKeepsOneMessagePerSlot) {
  for (std::uint32_t m = 1; m <= 600; ++m) {
    const HeapTreePair pair = heap_tree_pair(m);
    EXPECT_EQ(pair.in_order, m >= 2) << "m = " << m;
    expect_valid_pair(pair, m);
  }
  for (std::uint32_t k = 10; k <= 18; ++k) {
    for (const std::uint32_t m : {(1u << k) - 1, (1u << k) + 5}) {
      const HeapTreePair pair = heap_tree_pair(m);
      EXPECT_TRUE(pair.in_order) << "m = " << m;
      expect_valid_pair(pair, m);
    }
  }
}

TEST(HeapTreePair, InOrderKeepsMostEdgesBelowALeaf) {
  // The heap layout (A the heap over 0..m-1, B over m-1..0): its edges from position p to 2p+1
  // and 2p+2 leave a leaf of 16 nodes from p = 8 on.
  const auto heap_crossings = [](std::uint32_t m) {
    std::uint32_t count = 0;
    for (std::uint32_t p = 1; p < m; ++p) {
      count += crosses(p, (p - 1) / 2) ? 1 : 0;
      count += crosses(m - 1 - p, m - 1 - (p - 1) / 2) ? 1 : 0;
    }
    return count;
  };
  // Ready nodes of 128 and 512 nodes (the straggler's aside), and counts that are not 2^k - 1.
  EXPECT_EQ(crossings(heap_tree_pair(127), 127), 20u);
  EXPECT_EQ(heap_crossings(127), 223u);
  EXPECT_EQ(crossings(heap_tree_pair(511), 511), 92u);
  EXPECT_EQ(heap_crossings(511), 991u);
  EXPECT_EQ(crossings(heap_tree_pair(95), 95), 14u);
  EXPECT_EQ(heap_crossings(95), 159u);
}

std::uint32_t depth_of(const std::vector<Rank>& parent) {
  std::uint32_t deepest = 0;
  for (Rank v = 0; v < parent.size(); ++v) {
    std::uint32_t d = 0;
    for (Rank q = v; parent[q] != kNoParent; q = parent[q]) {
      ++d;
      if (d > parent.size()) return ~0u;  // a cycle
    }
    deepest = std::max(deepest, d);
  }
  return deepest;
}

TEST(DoubleBinaryTreeNodes, EveryNodeCountKeepsOneChunkPerNicAndStep) {
  for (std::uint32_t nodes = 1; nodes <= 1100; ++nodes) {
    std::vector<std::uint32_t> children(nodes, 0);
    for (int t = 0; t < 2; ++t) {
      const std::vector<Rank> parent = double_binary_tree_node_parents(nodes, t);
      ASSERT_EQ(parent.size(), nodes);
      EXPECT_EQ(std::count(parent.begin(), parent.end(), kNoParent), 1) << nodes << " nodes, tree " << t;
      // As deep as the heap over the same nodes (floor(log2 N) levels below the root).
      EXPECT_EQ(depth_of(parent), static_cast<std::uint32_t>(std::bit_width(nodes)) - 1) << nodes << " nodes, tree " << t;
      for (const Rank p : parent) {
        if (p != kNoParent) ++children[p];
      }
    }
    for (std::uint32_t v = 0; v < nodes; ++v) {
      EXPECT_LE(children[v], 2u) << "node " << v << " receives from " << children[v] << " children, " << nodes << " nodes";
    }
  }
}

TEST(DoubleBinaryTreeNodes, MostEdgesStayBelowALeaf) {
  const auto count = [](std::uint32_t nodes) {
    std::uint32_t c = 0;
    for (int t = 0; t < 2; ++t) {
      const std::vector<Rank> parent = double_binary_tree_node_parents(nodes, t);
      for (Rank v = 0; v < nodes; ++v) c += parent[v] != kNoParent && crosses(v, parent[v]) ? 1 : 0;
    }
    return c;
  };
  EXPECT_EQ(count(128), 20u);    // the heap pair: 224
  EXPECT_EQ(count(2048), 380u);  // the heap pair: 4,064
  EXPECT_EQ(count(96), 14u);
  EXPECT_EQ(count(125), 20u);
}

}  // namespace
}  // namespace collsim
