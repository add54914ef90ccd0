// The two trees across the nodes of stragglar_cluster, nccl_tree and nvls_tree (heap_tree_pair.hpp).
#include "heap_tree_pair.hpp"

#include <optional>

#include "collsim/models/error.hpp"

namespace collsim {
namespace {

HeapTreePair heap_layout(std::uint32_t m) {
  HeapTreePair pair;
  // Siblings are consecutive vertices, so (v + 1 + t) mod 2 tells them apart and a vertex's two
  // edges too. The roots 0 (A) and m-1 (B) would get colours 1 and m mod 2, equal for an even m:
  // vertex 0 then flips both its colours, free to since it is an only child in B (B's last
  // position). Without the flip the top sent two chunks per round after the arrival (5.39
  // instead of 4.09 ms after a 30 ms delay at 3 nodes x 8 GPUs, 1 GiB).
  const std::uint32_t flip0 = m % 2 == 0 ? 1 : 0;
  for (int t = 0; t < 2; ++t) {
    pair.vertex_at[t].resize(m);
    pair.colour[t].resize(m);
    for (std::uint32_t p = 0; p < m; ++p) pair.vertex_at[t][p] = t == 0 ? p : m - 1 - p;
    for (std::uint32_t v = 0; v < m; ++v) {
      pair.colour[t][v] = static_cast<std::uint8_t>((v + 1 + static_cast<std::uint32_t>(t) + (v == 0 ? flip0 : 0)) % 2);
    }
  }
  return pair;
}

// The positions of a heap of m positions in in-order (left subtree, position, right subtree).
std::vector<std::uint32_t> in_order_positions(std::uint32_t m) {
  std::vector<std::uint32_t> order;
  order.reserve(m);
  // Iterative walk: down the left spine, then a position, then its right subtree.
  std::vector<std::uint32_t> stack;
  std::uint64_t p = 0;
  while (p < m || !stack.empty()) {
    for (; p < m; p = 2 * p + 1) stack.push_back(static_cast<std::uint32_t>(p));
    const std::uint32_t top = stack.back();
    stack.pop_back();
    order.push_back(top);
    p = 2 * static_cast<std::uint64_t>(top) + 2;
  }
  return order;
}

// Colours by breadth-first 2-colouring of the constraint graph (vertex (t, v) has at most two
// constraints: its sibling or the other root, and its own edge in the other tree), or nullopt
// when a constraint cycle is odd.
std::optional<HeapTreePair> coloured(HeapTreePair pair, std::uint32_t m) {
  std::vector<std::vector<std::uint32_t>> differ(2 * m);  // (t, v) is index t * m + v
  const auto constrain = [&](std::uint32_t a, std::uint32_t b) {
    differ[a].push_back(b);
    differ[b].push_back(a);
  };
  for (std::uint32_t t = 0; t < 2; ++t) {
    for (std::uint64_t q = 0; 2 * q + 2 < m; ++q) {
      constrain(t * m + pair.vertex_at[t][2 * q + 1], t * m + pair.vertex_at[t][2 * q + 2]);
    }
  }
  for (std::uint32_t v = 0; v < m; ++v) constrain(v, m + v);
  constrain(pair.vertex_at[0][0], m + pair.vertex_at[1][0]);
  std::vector<int> colour(2 * m, -1);
  std::vector<std::uint32_t> queue;
  for (std::uint32_t s = 0; s < 2 * m; ++s) {
    if (colour[s] >= 0) continue;
    colour[s] = 0;
    queue.assign(1, s);
    for (std::size_t i = 0; i < queue.size(); ++i) {
      const std::uint32_t x = queue[i];
      for (const std::uint32_t y : differ[x]) {
        if (colour[y] < 0) {
          colour[y] = 1 - colour[x];
          queue.push_back(y);
        } else if (colour[y] == colour[x]) {
          return std::nullopt;
        }
      }
    }
  }
  for (std::uint32_t t = 0; t < 2; ++t) {
    pair.colour[t].resize(m);
    for (std::uint32_t v = 0; v < m; ++v) pair.colour[t][v] = static_cast<std::uint8_t>(colour[t * m + v]);
  }
  return pair;
}

}  // namespace

HeapTreePair heap_tree_pair(std::uint32_t vertices) {
  const std::uint32_t m = vertices;
  if (m >= 2) {
    HeapTreePair pair;
    pair.in_order = true;
    const std::vector<std::uint32_t> order = in_order_positions(m);
    const auto inner = [m](std::uint64_t p) { return 2 * p + 1 < m; };
    // Tree A: the k-th position in in-order holds vertex k.
    pair.vertex_at[0].resize(m);
    std::vector<std::uint32_t> a_leaves, a_inner;  // vertices, increasing
    for (std::uint32_t k = 0; k < m; ++k) {
      pair.vertex_at[0][order[k]] = k;
      (inner(order[k]) ? a_inner : a_leaves).push_back(k);
    }
    // Tree B walks the same in-order and hands out vertices in increasing order, an inner
    // position the next of A's leaves, a leaf the next of A's inner vertices (A's leaves once
    // those run out): B's inner vertices are A's leaves, and the k-th position still holds a
    // vertex near k. There are floor(m/2) inner positions and ceil(m/2) leaves, so it fits.
    pair.vertex_at[1].resize(m);
    std::size_t next_leaf = 0, next_inner = 0;
    for (const std::uint32_t p : order) {
      const bool take_leaf = inner(p) || next_inner == a_inner.size();
      pair.vertex_at[1][p] = take_leaf ? a_leaves[next_leaf++] : a_inner[next_inner++];
    }
    // The constraint cycles have been even for every m tried (every m up to 2,099 once; the
    // HeapTreePair tests: up to 600, and 2^k - 1 and 2^k + 5 up to k = 18): fall back rather
    // than fail should one not be.
    if (std::optional<HeapTreePair> done = coloured(std::move(pair), m)) return *std::move(done);
  }
  return heap_layout(m);
}

}  // namespace collsim
