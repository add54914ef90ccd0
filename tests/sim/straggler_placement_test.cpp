// Where the late GPU sits must not change a straggler-aware cluster schedule's time when the
// fabric looks the same from every node: generate_schedule() moves the straggler's role by a
// symmetry of the cluster (leaf blocks rotated as wholes, nodes rotated inside them), so the
// schedule meets the same leaves as with rank n-1 late. Before, it swapped the late node with
// the last one, and on oversubscribed leaves a rank 0 straggler cost 143 instead of 110 ms.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/sim/replay_engine.hpp"
#include "sim_test_support.hpp"

namespace collsim {
namespace {

using test::config;

// Leaves of `nodes_per_leaf` nodes, all full, `over`:1 leaf uplinks, `nics` NICs per node (0: one
// per GPU).
Topology leafy_cluster(Rank n, std::uint32_t gpus_per_node, std::uint32_t nodes_per_leaf, double over, bool rail,
                       std::uint32_t nics = 0) {
  ClusterSpec spec;
  spec.nics_per_node = nics;
  spec.gpus_per_node = gpus_per_node;
  spec.nodes_per_leaf = nodes_per_leaf;
  spec.oversubscription = over;
  spec.rail_optimized = rail;
  Topology t = make_cluster(n, spec, 1e-12, "placement");
  t.switch_reduction = true;
  return t;
}

double finish_with_late(const Topology& topo, Rank n, std::uint32_t g, std::uint32_t nodes_per_leaf, Rank late) {
  AlgorithmOptions options{n, late, 0, g};
  options.nodes_per_leaf = nodes_per_leaf;
  options.gpus_per_nic = gpus_per_nic_of(topo);
  const Schedule s = generate_schedule("stragglar_cluster", options);
  std::vector<double> arrival(n, 0.0);
  arrival[late] = 2e-3;
  const RunResult r = ReplayEngine().run(s, config(topo, 1 << 26, StartMode::Barrier, arrival));
  return r.time_s;
}

TEST(StragglerPlacement, AnyLateRankTakesTheLastRanksTimeOnFullLeaves) {
  int compared = 0;
  for (const bool rail : {false, true}) {
    for (const double over : {2.0, 3.0}) {
      for (const auto& [g, nodes, per_leaf] : {std::tuple{4u, 12u, 3u}, std::tuple{2u, 8u, 4u}, std::tuple{4u, 6u, 2u}}) {
        const Rank n = g * nodes;
        const Topology topo = leafy_cluster(n, g, per_leaf, over, rail);
        const double reference = finish_with_late(topo, n, g, per_leaf, n - 1);
        for (const Rank late : {Rank{0}, Rank{1}, n / 2, n / 2 + 1, n - g, n - 2}) {
          const std::string what = "G=" + std::to_string(g) + " nodes=" + std::to_string(nodes) + " per leaf " +
                                   std::to_string(per_leaf) + " " + std::to_string(over) + ":1 rail=" +
                                   std::to_string(rail) + " late " + std::to_string(late);
          EXPECT_NEAR(finish_with_late(topo, n, g, per_leaf, late), reference, 1e-9 * reference) << what;
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 72);
}

// GPUs that share a NIC: the late GPU's role moves by whole NIC groups. A swap of its local index
// with the last one put two GPUs into the other's NIC group, and the time then depended on which
// GPU of a node was late.
TEST(StragglerPlacement, AnyLateGpuTakesTheLastGpusTimeWhenGpusShareNics) {
  int compared = 0;
  for (const bool rail : {false, true}) {
    for (const auto& [g, nics, nodes, per_leaf] : {std::tuple{4u, 2u, 8u, 4u}, std::tuple{8u, 2u, 6u, 3u}, std::tuple{8u, 4u, 4u, 2u}}) {
      const Rank n = g * nodes;
      const Topology topo = leafy_cluster(n, g, per_leaf, 2.0, rail, nics);
      ASSERT_EQ(gpus_per_nic_of(topo), g / nics);
      const double reference = finish_with_late(topo, n, g, per_leaf, n - 1);
      for (Rank local = 0; local + 1 < g; ++local) {
        for (const Rank node : {Rank{0}, nodes / 2}) {
          const Rank late = node * g + local;
          EXPECT_NEAR(finish_with_late(topo, n, g, per_leaf, late), reference, 1e-9 * reference)
              << "G=" << g << " NICs=" << nics << " nodes=" << nodes << " rail=" << rail << " late " << late;
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 2 * 2 * (3 + 7 + 7));
}

}  // namespace
}  // namespace collsim
