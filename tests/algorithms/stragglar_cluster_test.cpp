#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/algorithms/reference_executor.hpp"
#include "collsim/algorithms/registry.hpp"
#include "collsim/algorithms/verifier.hpp"
#include "collsim/models/error.hpp"

namespace collsim {
namespace {

Schedule cluster(Rank n, std::uint32_t gpus_per_node, std::uint32_t slice_chunks = 6) {
  AlgorithmOptions options;
  options.n = n;
  options.gpus_per_node = gpus_per_node;
  options.pipeline_chunks = slice_chunks;
  return generate_stragglar_cluster(options);
}

TEST(StragglarCluster, CorrectForManyNodeCountsAndNodeSizes) {
  for (const std::uint32_t g : {1u, 2u, 3u, 4u, 8u}) {
    for (std::uint32_t nodes = 1; nodes <= 11; ++nodes) {
      const Rank n = g * nodes;
      if (n < 2) continue;
      for (const std::uint32_t depth : {2u, 6u}) {
        const Schedule s = cluster(n, g, depth);
        const std::string what = "G=" + std::to_string(g) + " nodes=" + std::to_string(nodes) + " depth=" +
                                 std::to_string(depth);
        const auto d = verify_schedule(s);
        ASSERT_TRUE(d.empty()) << what << ": " << format_diagnostic(s, d[0]);
        const auto ref = execute_reference(s, 2);
        ASSERT_TRUE(ref.correct) << what << ": " << ref.first_mismatch;
        EXPECT_EQ(s.straggler, static_cast<std::int64_t>(n - 1)) << what;
      }
    }
  }
}

TEST(StragglarCluster, AnyStragglerThroughTheTable) {
  for (const Rank straggler : {0u, 5u, 13u}) {
    AlgorithmOptions options{24, straggler, 4, 4};
    const Schedule s = generate_schedule("stragglar_cluster", options);
    EXPECT_EQ(s.straggler, static_cast<std::int64_t>(straggler));
    const auto d = verify_schedule(s);
    ASSERT_TRUE(d.empty()) << format_diagnostic(s, d[0]);
    EXPECT_TRUE(execute_reference(s, 2).correct);
    // The relabelling keeps nodes and rails whole: every phase has as many NVLink, same-rail and
    // cross-rail NIC transfers as the schedule built for rank n-1 (a plain swap of two ranks
    // would send the late node's NVLink work across the network), and the straggler talks only
    // to its node and its rail.
    const Schedule base = generate_schedule("stragglar_cluster", AlgorithmOptions{24, {}, 4, 4});
    const auto kinds = [](const Phase& phase) {
      std::array<std::size_t, 3> count{};
      for (const Transfer& t : phase.transfers()) ++count[t.src / 4 == t.dst / 4 ? 0 : t.src % 4 == t.dst % 4 ? 1 : 2];
      return count;
    };
    ASSERT_EQ(s.phases.size(), base.phases.size());
    for (std::size_t p = 0; p < s.phases.size(); ++p) EXPECT_EQ(kinds(s.phases[p]), kinds(base.phases[p])) << p;
    for (const Transfer& t : s.phases.back().transfers()) {
      if (t.src == straggler) {
        EXPECT_TRUE(t.dst / 4 == straggler / 4 || t.dst % 4 == straggler % 4) << t.dst;
      }
    }
  }
}

TEST(StragglarCluster, StragglerTakesPartInTheCompletionOnly) {
  for (const std::uint32_t g : {1u, 2u, 4u}) {
    const Rank n = 5 * g;
    const Schedule s = cluster(n, g);
    ASSERT_EQ(s.phases.back().name(), "completion");
    for (std::size_t p = 0; p + 1 < s.phases.size(); ++p) {
      for (const Transfer& t : s.phases[p].transfers()) {
        EXPECT_NE(t.src, n - 1) << s.phases[p].name();
        EXPECT_NE(t.dst, n - 1) << s.phases[p].name();
      }
    }
  }
}

// After the arrival no NIC carries more than one slice each way (the lower bound: every other
// node must take in the straggler's whole buffer through its G NICs), and the straggler sends
// its buffer once over NVLink (handing slice G-1 to one keeper per chunk, not to every peer).
TEST(StragglarCluster, CompletionLoadsEachNicWithOneSlice) {
  const std::uint32_t g = 4, nodes = 7, slice = 6;
  const Rank n = g * nodes;
  const Schedule s = cluster(n, g, slice);
  std::vector<std::uint32_t> nic_out(n, 0), nic_in(n, 0), nvlink_out(n, 0);
  for (const Transfer& t : s.phases.back().transfers()) {
    if (t.src / g != t.dst / g) {
      nic_out[t.src] += t.chunk_count;
      nic_in[t.dst] += t.chunk_count;
      EXPECT_EQ(t.src % g, t.dst % g) << t.src << "->" << t.dst << " leaves its rail";
    } else {
      nvlink_out[t.src] += t.chunk_count;
    }
  }
  for (Rank r = 0; r < n; ++r) {
    EXPECT_LE(nic_out[r], slice) << "rank " << r;
    EXPECT_LE(nic_in[r], slice) << "rank " << r;
  }
  EXPECT_EQ(nvlink_out[n - 1], s.num_chunks);
}

// After the arrival each GPU sends and receives at most one chunk over its NIC in every round, for
// any node count: a round then costs one chunk's time on a NIC (the timing the depth is sized
// for). Before it, so do the ready nodes' NICs (the late node's keepers take part of rail G-1's
// sums as well, by design). With an odd number of nodes (an even number of ready nodes) both tree
// roots once took their rail's top's edge in the same slot, so the top sent and received two
// chunks per round after the arrival: 5.39 ms instead of 4.09 ms after a 30 ms delay at 3 x 8
// GPUs, 1 GiB. Not with one GPU per node, where the roots' hand-off to the straggler shares their
// NIC by design (docs/stragglar_cluster.md, "Where it loses").
TEST(StragglarCluster, EveryNicCarriesOneChunkPerRound) {
  for (const std::uint32_t g : {2u, 3u, 4u, 8u}) {
    for (std::uint32_t nodes = 2; nodes <= 40; ++nodes) {
      const Rank n = g * nodes;
      const Rank late_base = n - g;
      const Schedule s = cluster(n, g, 8);
      for (const Phase& phase : s.phases) {
        const bool completion = phase.name() == "completion";
        if (!completion && phase.name() != "inter_reduce") continue;
        for (std::size_t r = 0; r < phase.num_rounds(); ++r) {
          std::vector<std::uint32_t> out(n, 0), in(n, 0);
          for (const Transfer& t : phase.round(r)) {
            if (t.src / g == t.dst / g) continue;
            EXPECT_LE(++out[t.src], 1u) << "G=" << g << " nodes=" << nodes << " " << phase.name() << " round " << r
                                        << ": rank " << t.src << " sends twice";
            if (!completion && t.dst >= late_base) continue;
            EXPECT_LE(++in[t.dst], 1u) << "G=" << g << " nodes=" << nodes << " " << phase.name() << " round " << r
                                       << ": rank " << t.dst << " receives twice";
          }
        }
      }
    }
  }
}

// With one GPU per node the node-level StragglAR is StragglAR over the GPUs: the schedule is
// flat StragglAR's, transfer for transfer (the trees lost to it on 2 to 96 such nodes).
TEST(StragglarCluster, OneGpuPerNodeIsFlatStragglar) {
  for (const Rank n : {2u, 3u, 6u, 13u}) {
    const Schedule s = cluster(n, 1);
    AlgorithmOptions flat_options;
    flat_options.n = n;
    const Schedule flat = generate_stragglar(flat_options);
    ASSERT_EQ(s.phases.size(), flat.phases.size()) << n;
    EXPECT_EQ(s.num_chunks, flat.num_chunks) << n;
    for (std::size_t p = 0; p < s.phases.size(); ++p) {
      ASSERT_EQ(s.phases[p].num_rounds(), flat.phases[p].num_rounds()) << n;
      for (std::size_t r = 0; r < s.phases[p].num_rounds(); ++r) {
        const auto a = s.phases[p].round(r);
        const auto b = flat.phases[p].round(r);
        ASSERT_EQ(a.size(), b.size()) << n;
        for (std::size_t i = 0; i < a.size(); ++i) {
          EXPECT_EQ(a[i].src, b[i].src);
          EXPECT_EQ(a[i].dst, b[i].dst);
          EXPECT_EQ(a[i].chunk_begin, b[i].chunk_begin);
          EXPECT_EQ(a[i].chunk_count, b[i].chunk_count);
        }
      }
    }
  }
}

TEST(StragglarCluster, RejectsBadNodeSizesAndDepths) {
  EXPECT_THROW(cluster(12, 8), ScheduleError);
  EXPECT_THROW(cluster(12, 0), ScheduleError);
  // Depths go through the table row's rule (generate_schedule); 0 there means the default.
  EXPECT_THROW(generate_schedule("stragglar_cluster", AlgorithmOptions{12, {}, 5, 4}), ScheduleError);
  EXPECT_THROW(cluster(12, 4, 65536), ScheduleError);
  try {
    generate_schedule("stragglar_cluster", AlgorithmOptions{12, {}, 7, 4});
    FAIL() << "odd depth accepted";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("pipeline_chunks = 7 must be even"), std::string::npos) << e.what();
  }
}

// The depth follows the buffer: one step for a small buffer (latency-bound), deep pipelines for
// large ones, capped; the sizing is used only when the options give no depth.
TEST(StragglarCluster, PipelineDepthFollowsTheBufferSize) {
  AlgorithmOptions options{1024, {}, 0, 8};
  const Schedule unsized = generate_schedule("stragglar_cluster", options);
  EXPECT_EQ(unsized.num_chunks, 8u * find_algorithm("stragglar_cluster").default_pipeline_chunks);
  options.network_latency_s = 10e-6;
  options.network_bandwidth_Bps = 50e9;
  options.size_bytes = 1 << 20;
  EXPECT_EQ(stragglar_cluster_depth(options), 2u);
  options.size_bytes = 1 << 30;
  // sqrt((7 + 2) * 2^30 / (8 * 50e9) / (2 * 10us)) = 34.8 steps.
  EXPECT_EQ(stragglar_cluster_depth(options), 70u);
  EXPECT_EQ(generate_schedule("stragglar_cluster", options).num_chunks, 8u * 70u);
  options.size_bytes = 1e12;
  EXPECT_EQ(stragglar_cluster_depth(options), 128u);
  // The pace is the slower of a GPU's NIC share and its NVLink forwarding (G-1 chunks a round):
  // 450 GB/s NVLink binds from 64.3 GB/s NICs on, so 100 and 200 GB/s NICs get one depth (not a
  // shallower one for the faster NIC), and 8 GPUs sharing one NIC pipeline deeper.
  options.size_bytes = 1 << 30;
  options.nvlink_bandwidth_Bps = 450e9;
  EXPECT_EQ(stragglar_cluster_depth(options), 70u);  // 50 GB/s NICs: NIC-bound, as before
  options.network_bandwidth_Bps = 100e9;
  const std::uint32_t at_800_Gbps = stragglar_cluster_depth(options);
  options.network_bandwidth_Bps = 200e9;
  EXPECT_EQ(stragglar_cluster_depth(options), at_800_Gbps);
  // sqrt((7 + 2) * 2^30 / (8 * 450e9 / 7) / (2 * 10us)) = 30.7 steps.
  EXPECT_EQ(at_800_Gbps, 62u);
  options.network_bandwidth_Bps = 50e9;
  options.gpus_per_nic = 8;
  // sqrt((7 + 2) * 2^30 / (8 * 50e9 / 8) / (2 * 10us)) = 98 steps, capped at 64.
  EXPECT_EQ(stragglar_cluster_depth(options), 128u);
  options.gpus_per_nic = 2;
  // sqrt((7 + 2) * 2^30 / (8 * 25e9) / (2 * 10us)) = 49.2 steps.
  EXPECT_EQ(stragglar_cluster_depth(options), 98u);
  options.pipeline_chunks = 6;
  EXPECT_EQ(generate_schedule("stragglar_cluster", options).num_chunks, 8u * 6u);
  // Rows without depth_for ignore the sizing.
  AlgorithmOptions tree{16, {}, 0, 0, 1 << 20, 10e-6, 50e9};
  EXPECT_EQ(generate_schedule("double_binary_tree", tree).num_chunks, find_algorithm("double_binary_tree").default_pipeline_chunks);
}

TEST(StragglarCluster, TableRowIsStragglerAwareAndHierarchical) {
  const AlgorithmInfo& info = find_algorithm("stragglar_cluster");
  EXPECT_TRUE(info.straggler_aware);
  EXPECT_TRUE(info.hierarchical);
  EXPECT_FALSE(info.unsupported_reason(16).empty());
  EXPECT_TRUE(info.unsupported_reason(16, NConstraintContext{Rank{8}, std::nullopt}).empty());
  EXPECT_FALSE(info.unsupported_reason(12, NConstraintContext{Rank{8}, std::nullopt}).empty());
}

}  // namespace
}  // namespace collsim
