#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/algorithms/reference_executor.hpp"
#include "collsim/algorithms/registry.hpp"
#include "collsim/algorithms/verifier.hpp"
#include "collsim/models/error.hpp"

namespace collsim {
namespace {

Schedule multichannel(Rank n, std::uint32_t gpus_per_node) {
  AlgorithmOptions options;
  options.n = n;
  options.gpus_per_node = gpus_per_node;
  return generate_ring_multichannel(options);
}

TEST(RingMultichannel, CorrectForManyNodeCountsAndNodeSizes) {
  for (const std::uint32_t g : {1u, 2u, 3u, 4u, 8u}) {
    for (std::uint32_t nodes = 1; nodes <= 9; ++nodes) {
      const Rank n = g * nodes;
      if (n < 2) continue;
      const std::string what = "G=" + std::to_string(g) + " nodes=" + std::to_string(nodes);
      const Schedule s = multichannel(n, g);
      const auto d = verify_schedule(s);
      ASSERT_TRUE(d.empty()) << what << ": " << format_diagnostic(s, d[0]);
      const auto ref = execute_reference(s, 2);
      ASSERT_TRUE(ref.correct) << what << ": " << ref.first_mismatch;
      EXPECT_EQ(s.num_chunks, n * g) << what;
      EXPECT_EQ(s.ports, g) << what;
      EXPECT_EQ(s.num_rounds(), 2u * (n - 1)) << what;
    }
  }
}

// Each channel's ring visits every GPU once, a node's GPUs one after the other, and crosses
// between nodes on one rail (the closing hop of an odd node count excepted).
TEST(RingMultichannel, RingsChainNodesAndStayOnTheirRails) {
  for (const std::uint32_t g : {1u, 2u, 4u, 8u}) {
    for (const std::uint32_t nodes : {1u, 2u, 3u, 4u, 5u}) {
      const Rank n = g * nodes;
      for (std::uint32_t c = 0; c < g; ++c) {
        const std::string what = "G=" + std::to_string(g) + " nodes=" + std::to_string(nodes) + " c=" + std::to_string(c);
        std::vector<Rank> order = ring_multichannel_order(n, g, c);
        ASSERT_EQ(order.size(), n) << what;
        EXPECT_EQ(order.front(), c) << what << ": node 0 is entered through rail c";
        for (Rank i = 0; i < n; ++i) EXPECT_EQ(order[i] / g, i / g) << what << " position " << i;
        for (Rank i = 0; i + 1 < n; ++i) {
          if (order[i] / g != order[i + 1] / g) {
            EXPECT_EQ(order[i] % g, order[i + 1] % g) << what << " hop " << order[i] << "->" << order[i + 1];
          }
        }
        if (nodes % 2 == 0) {
          EXPECT_EQ(order.back() % g, order.front() % g) << what;
        }
        std::sort(order.begin(), order.end());
        for (Rank i = 0; i < n; ++i) ASSERT_EQ(order[i], i) << what;
      }
    }
  }
}

// NCCL's point: each NIC carries its rail's share only. Every GPU sends and receives exactly one
// channel's 2 (n-1) network chunks (of n per slice), so no NIC carries more than 2 (n-1)/n * S/G;
// a chain that left every node through one GPU would load that GPU's NIC G times as much.
TEST(RingMultichannel, EveryNicCarriesOneChannel) {
  const std::uint32_t g = 4;
  for (const std::uint32_t nodes : {2u, 4u, 6u}) {
    const Rank n = g * nodes;
    const Schedule s = multichannel(n, g);
    std::vector<std::uint32_t> nic_out(n, 0), nic_in(n, 0);
    for (const Phase& phase : s.phases) {
      for (const Transfer& t : phase.transfers()) {
        if (t.src / g == t.dst / g) continue;
        nic_out[t.src] += t.chunk_count;
        nic_in[t.dst] += t.chunk_count;
      }
    }
    for (Rank r = 0; r < n; ++r) {
      EXPECT_EQ(nic_out[r], 2u * (n - 1)) << "nodes=" << nodes << " rank " << r;
      EXPECT_EQ(nic_in[r], 2u * (n - 1)) << "nodes=" << nodes << " rank " << r;
    }
  }
}

TEST(RingMultichannel, TableRowIsHierarchicalAndNeedsNodes) {
  const AlgorithmInfo& info = find_algorithm("ring_multichannel");
  EXPECT_TRUE(info.hierarchical);
  EXPECT_FALSE(info.straggler_aware);
  NConstraintContext context;
  context.gpus_per_node = 8;
  EXPECT_TRUE(info.unsupported_reason(64, context).empty());
  EXPECT_FALSE(info.unsupported_reason(12, context).empty());
  EXPECT_FALSE(info.unsupported_reason(64).empty()) << "no node structure known";
  EXPECT_THROW(multichannel(12, 8), ScheduleError);
  EXPECT_THROW(multichannel(12, 0), ScheduleError);
  const Schedule s = generate_schedule("ring_multichannel", AlgorithmOptions{16, {}, 0, 4});
  EXPECT_EQ(s.algorithm, "ring_multichannel");
}

}  // namespace
}  // namespace collsim
