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

Schedule nvls_tree(Rank n, std::uint32_t gpus_per_node, std::uint32_t pieces = 8) {
  AlgorithmOptions options;
  options.n = n;
  options.gpus_per_node = gpus_per_node;
  options.pipeline_chunks = pieces;
  return generate_nvls_tree(options);
}

TEST(NvlsTree, CorrectForManyNodeCountsAndNodeSizes) {
  for (const std::uint32_t g : {1u, 2u, 3u, 4u, 8u}) {
    for (std::uint32_t nodes = 1; nodes <= 11; ++nodes) {
      const Rank n = g * nodes;
      if (n < 2) continue;
      for (const std::uint32_t pieces : {2u, 10u}) {
        const std::string what =
            "G=" + std::to_string(g) + " nodes=" + std::to_string(nodes) + " pieces=" + std::to_string(pieces);
        const Schedule s = nvls_tree(n, g, pieces);
        const auto d = verify_schedule(s);
        ASSERT_TRUE(d.empty()) << what << ": " << format_diagnostic(s, d[0]);
        const auto ref = execute_reference(s, 2);
        ASSERT_TRUE(ref.correct) << what << ": " << ref.first_mismatch;
        EXPECT_EQ(s.num_chunks, g * pieces) << what;
        EXPECT_EQ(s.num_switch_ranks, g > 1 ? nodes : 0u) << what;
      }
    }
  }
}

// Inside a node every byte goes through the node's own switch (no GPU -> GPU NVLink transfer),
// and every NIC hop stays on its rail: GPU l of a node talks to GPU l of others, about slice l.
// Bytes per GPU: its NIC carries a tree AllReduce of its slice (each piece up and down once per
// tree edge), its NVLink up the whole buffer plus its slice.
TEST(NvlsTree, TransfersStayOnRailsAndGoThroughTheNodesSwitch) {
  const std::uint32_t g = 4, nodes = 7, pieces = 6;
  const Rank n = g * nodes;
  const Schedule s = nvls_tree(n, g, pieces);
  std::vector<std::uint32_t> nic_out(n, 0), nvlink_up(n, 0), nvlink_down(n, 0);
  for (const Transfer& t : s.phases[0].transfers()) {
    if (s.is_switch(t.dst)) {
      EXPECT_EQ(t.dst - n, t.src / g) << t.src << "->" << t.dst;
      nvlink_up[t.src] += t.chunk_count;
    } else if (s.is_switch(t.src)) {
      EXPECT_EQ(t.src - n, t.dst / g) << t.src << "->" << t.dst;
      nvlink_down[t.dst] += t.chunk_count;
    } else {
      ASSERT_NE(t.src / g, t.dst / g) << "GPU-to-GPU transfer inside a node: " << t.src << "->" << t.dst;
      EXPECT_EQ(t.src % g, t.dst % g) << t.src << "->" << t.dst;
      ASSERT_EQ(t.chunk_count, 1u);
      EXPECT_EQ(t.chunk_begin % g, t.src % g) << "slice of rail " << t.src % g;
      nic_out[t.src] += 1;
    }
  }
  for (Rank r = 0; r < n; ++r) {
    EXPECT_EQ(nvlink_up[r], g * pieces + pieces) << "rank " << r;
    EXPECT_EQ(nvlink_down[r], pieces + (g - 1) * pieces) << "rank " << r;
    // A node is inner (two children) in at most one of the two trees.
    EXPECT_LE(nic_out[r], pieces / 2 * (1 + 2) + pieces / 2 * 1) << "rank " << r;
  }
}

// Pipelining: one more step (two pieces) costs one more round, not another fill of the trees.
TEST(NvlsTree, ExtraPiecesCostOneRoundPerStep) {
  const Schedule a = nvls_tree(40, 4, 8);
  const Schedule b = nvls_tree(40, 4, 18);
  EXPECT_EQ(b.num_rounds(), a.num_rounds() + 5);
}

TEST(NvlsTree, TableRowNeedsASwitchThatReducesAndANodeSize) {
  const AlgorithmInfo& info = find_algorithm("nvls_tree");
  EXPECT_TRUE(info.hierarchical);
  EXPECT_TRUE(info.needs_switch_reduction);
  EXPECT_FALSE(info.has_closed_form()) << "a pipeline over two trees of different shapes: replay times it";
  NConstraintContext context;
  context.gpus_per_node = 8;
  EXPECT_TRUE(info.unsupported_reason(24, context).empty());
  EXPECT_FALSE(info.unsupported_reason(20, context).empty());
  context.switch_reduction = false;
  EXPECT_NE(info.unsupported_reason(24, context).find("switch_reduction"), std::string::npos);
  EXPECT_THROW(nvls_tree(20, 8), ScheduleError);
  EXPECT_THROW(nvls_tree(20, 0), ScheduleError);
  try {
    generate_schedule("nvls_tree", AlgorithmOptions{24, {}, 7, 8});
    FAIL() << "odd depth accepted";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("nvls_tree: pipeline_chunks = 7 must be even"), std::string::npos) << e.what();
  }
  const Schedule s = generate_schedule("nvls_tree", AlgorithmOptions{24, {}, 0, 8});
  EXPECT_EQ(s.num_chunks, 8 * info.default_pipeline_chunks);
}

// The depth follows the buffer: deeper for larger buffers, even, within 2..256.
TEST(NvlsTree, DepthGrowsWithTheBuffer) {
  AlgorithmOptions options{1024, {}, 0, 8};
  options.network_latency_s = 10e-6;
  options.network_bandwidth_Bps = 50e9;
  options.size_bytes = 1 << 20;
  const std::uint32_t small = nvls_tree_depth(options);
  options.size_bytes = 1 << 30;
  const std::uint32_t large = nvls_tree_depth(options);
  EXPECT_LT(small, large);
  for (std::uint32_t d : {small, large}) {
    EXPECT_EQ(d % 2, 0u);
    EXPECT_GE(d, 2u);
    EXPECT_LE(d, 256u);
  }
  const Schedule s = generate_schedule("nvls_tree", options);
  EXPECT_EQ(s.num_chunks, 8 * large) << "generate_schedule() takes the depth from depth_for when the size is known";
  // At 16,384 GPUs the transfer budget caps the 84 steps the formula asks for at 48.
  options.n = 16384;
  EXPECT_EQ(nvls_tree_depth(options), 96u);
  options.n = 4096;
  EXPECT_GT(nvls_tree_depth(options), 96u) << "4,096 GPUs are not capped";
}

// A GPU's NVLink carries about S each way per AllReduce, its NIC 2 S / G: with 450 GB/s NVLink at
// the switch's 0.797 efficiency, NICs faster than 2 x 358.6 / 8 = 89.6 GB/s leave NVLink the
// bottleneck, and the depth must not shrink with NIC bandwidth beyond that (the NIC-only formula
// took 28 steps at 1600 Gb/s against 40 at 800 Gb/s: 4.30 ms against 4.09 ms, 12 x 8 GPUs, 1 GiB).
// 12 H100 nodes of 8 GPUs, 1 GiB: NVLink 450 GB/s through a switch at 0.797, 400 Gb/s NICs, 10 us.
AlgorithmOptions twelve_h100_nodes() {
  AlgorithmOptions options{96, {}, 0, 8};
  options.network_latency_s = 10e-6;
  options.size_bytes = 1 << 30;
  options.switch_efficiency = 0.796875;
  options.nvlink_bandwidth_Bps = 450e9;
  options.network_bandwidth_Bps = 50e9;
  return options;
}

TEST(NvlsTree, DepthFollowsNvlinkWhenItBinds) {
  AlgorithmOptions options = twelve_h100_nodes();
  EXPECT_EQ(nvls_tree_depth(options), 114u) << "NIC-bound, as before";
  options.network_bandwidth_Bps = 100e9;
  const std::uint32_t at_800_Gbps = nvls_tree_depth(options);
  options.network_bandwidth_Bps = 200e9;
  EXPECT_EQ(nvls_tree_depth(options), at_800_Gbps);
  // sqrt(12 * 2^30 / (2 * 450e9 * 0.796875 * 10us)) = 42.4 steps.
  EXPECT_EQ(at_800_Gbps, 84u);
}

// GPUs that share NICs have the NICs' bandwidth, not G NICs': with 2 GPUs per 400 Gb/s NIC the
// depth is the one of 4 NICs, sqrt(12 * 2^30 / (4 * 50e9 * 10us)) = 80.3 steps, not 56.8
// (cluster_h100_1024_4nic at 1 GiB: 12.76 ms instead of 12.82 ms with the 8-NIC depth).
TEST(NvlsTree, DepthCountsSharedNics) {
  AlgorithmOptions options = twelve_h100_nodes();
  options.gpus_per_nic = 2;
  EXPECT_EQ(nvls_tree_depth(options), 160u);
}

}  // namespace
}  // namespace collsim
