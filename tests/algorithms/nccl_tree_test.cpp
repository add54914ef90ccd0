#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/algorithms/reference_executor.hpp"
#include "collsim/algorithms/registry.hpp"
#include "collsim/algorithms/verifier.hpp"
#include "collsim/models/error.hpp"

namespace collsim {
namespace {

Schedule nccl_tree(Rank n, std::uint32_t gpus_per_node, std::uint32_t chunks = 8) {
  AlgorithmOptions options;
  options.n = n;
  options.gpus_per_node = gpus_per_node;
  options.pipeline_chunks = chunks;
  return generate_nccl_tree(options);
}

TEST(NcclTree, CorrectForManyNodeCountsAndNodeSizes) {
  for (const std::uint32_t g : {1u, 2u, 3u, 4u, 8u}) {
    for (std::uint32_t nodes = 1; nodes <= 11; ++nodes) {
      const Rank n = g * nodes;
      if (n < 2) continue;
      for (const std::uint32_t chunks : {2u, 10u}) {
        const std::string what =
            "G=" + std::to_string(g) + " nodes=" + std::to_string(nodes) + " chunks=" + std::to_string(chunks);
        const Schedule s = nccl_tree(n, g, chunks);
        const auto d = verify_schedule(s);
        ASSERT_TRUE(d.empty()) << what << ": " << format_diagnostic(s, d[0]);
        const auto ref = execute_reference(s, 2);
        ASSERT_TRUE(ref.correct) << what << ": " << ref.first_mismatch;
        EXPECT_EQ(s.num_chunks, g * chunks) << what;
      }
    }
  }
}

// Inside a node only NVLink chain hops between neighbours (mod G) of the chain, and every NIC
// hop stays on its rail: tree (c, t) joins the nodes through GPU c.
TEST(NcclTree, NicHopsStayOnTheirRailAndChainsInsideNodes) {
  const std::uint32_t g = 4, nodes = 7, chunks = 6;
  const Rank n = g * nodes;
  const Schedule s = nccl_tree(n, g, chunks);
  std::vector<std::uint32_t> nic_out(n, 0);
  for (const Transfer& t : s.phases[0].transfers()) {
    const std::uint32_t channel = t.chunk_begin / chunks;
    if (t.src / g != t.dst / g) {
      EXPECT_EQ(t.src % g, channel) << t.src << "->" << t.dst;
      EXPECT_EQ(t.dst % g, channel) << t.src << "->" << t.dst;
      nic_out[t.src] += t.chunk_count;
    } else {
      const std::uint32_t a = t.src % g, b = t.dst % g;
      EXPECT_TRUE((a + 1) % g == b || (b + 1) % g == a) << t.src << "->" << t.dst;
    }
  }
  // Each GPU's NIC serves one channel: its two trees, at most 3 edges each (parent and two
  // children) of half the slice's chunks.
  for (Rank r = 0; r < n; ++r) EXPECT_LE(nic_out[r], 3u * chunks) << "rank " << r;
}

// Pipelining: one more chunk per tree costs one more round, not another fill of the trees.
TEST(NcclTree, ExtraChunksCostOneRoundEach) {
  const Schedule a = nccl_tree(40, 4, 8);
  const Schedule b = nccl_tree(40, 4, 18);
  EXPECT_EQ(b.num_rounds(), a.num_rounds() + 5);
}

TEST(NcclTree, TableRowIsHierarchicalWithADefaultDepth) {
  const AlgorithmInfo& info = find_algorithm("nccl_tree");
  EXPECT_TRUE(info.hierarchical);
  EXPECT_GT(info.default_pipeline_chunks, 0u);
  NConstraintContext context;
  context.gpus_per_node = 8;
  EXPECT_TRUE(info.unsupported_reason(24, context).empty());
  EXPECT_FALSE(info.unsupported_reason(20, context).empty());
  EXPECT_THROW(nccl_tree(20, 8), ScheduleError);
  EXPECT_THROW(nccl_tree(20, 0), ScheduleError);
  try {
    generate_schedule("nccl_tree", AlgorithmOptions{24, {}, 7, 8});
    FAIL() << "odd depth accepted";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("nccl_tree: pipeline_chunks = 7 must be even"), std::string::npos) << e.what();
  }
  const Schedule s = generate_schedule("nccl_tree", AlgorithmOptions{24, {}, 0, 8});
  EXPECT_EQ(s.num_chunks, 8 * info.default_pipeline_chunks);
}

}  // namespace
}  // namespace collsim
