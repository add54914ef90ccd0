// Closed forms of hierarchical and hierarchical_rhd on contention-free clusters (1:1, a NIC per
// GPU): the closed_form engine against replay, and the cases it must refuse.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/closed_form.hpp"
#include "collsim/models/error.hpp"
#include "collsim/sim/closed_form_engine.hpp"
#include "collsim/sim/replay_engine.hpp"
#include "sim_test_support.hpp"

namespace collsim {
namespace {

using test::config;

std::string config_error(const Schedule& s, const RunConfig& c) {
  try {
    (void)ClosedFormEngine().run(s, c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

ClusterSpec spec_of(std::uint32_t gpus_per_node) {
  ClusterSpec spec;
  spec.gpus_per_node = gpus_per_node;
  spec.nodes_per_leaf = 2;  // several leaves: routes through the (never binding) spine too
  return spec;
}

// Node counts 1 to 9 (powers of two and not: RHD's 3-2 elimination), 1, 2, 4 and 8 GPUs per
// node, two sizes, with and without gamma, nobody late or the last GPU late (short and long),
// both start modes.
TEST(HierarchicalClosedForm, AgreesWithReplayOnOneToOneClusters) {
  int compared = 0;
  for (const char* algo : {"hierarchical", "hierarchical_rhd"}) {
    for (const std::uint32_t g : {1u, 2u, 4u, 8u}) {
      for (std::uint32_t nodes = 1; nodes <= 9; ++nodes) {
        const Rank n = g * nodes;
        if (n < 2) continue;
        const Schedule s = generate_schedule(algo, AlgorithmOptions{n, {}, 0, g});
        for (const double gamma : {0.0, 1.0 / 200e9}) {
          const Topology topo = make_cluster(n, spec_of(g), gamma, "c");
          for (const double size : {1.0 * (1 << 20), 3.0 * (1 << 27)}) {
            for (const StartMode mode : {StartMode::Barrier, StartMode::Eager}) {
              for (const double d : {0.0, 7e-6, 3e-3}) {
                std::vector<double> arrival(n, 0.0);
                arrival[n - 1] = d;
                const RunConfig c = config(topo, size, mode, arrival);
                const double replayed = ReplayEngine().run(s, c).time_s;
                const double formula = ClosedFormEngine().run(s, c).time_s;
                EXPECT_NEAR(formula, replayed, 1e-9 * replayed)
                    << algo << " G=" << g << " nodes=" << nodes << " size=" << size << " gamma=" << gamma << " "
                    << start_mode_name(mode) << " d=" << d;
                ++compared;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 1500);
}

// Checked by hand once: 2 nodes of 4 GPUs, ring across the two nodes, no gamma, nobody late.
TEST(HierarchicalClosedForm, MatchesTheHandFormula) {
  ClosedFormInput in;
  in.n = 8;
  in.gpus_per_node = 4;
  in.size_bytes = 1 << 30;
  in.link = LinkModel{10e-6, 50e9, 0.0};
  in.node_link = LinkModel{3e-6, 450e9, 0.0};
  const double slice = (1 << 30) / 4.0;
  const double intra = 3 * (3e-6 + slice / 450e9);
  const double across = 2 * (10e-6 + slice / 2 / 50e9);  // a ring of 2: one RS and one AG round
  const ClosedFormResult r = closed_form_time("hierarchical", in);
  EXPECT_NEAR(r.time_s, 2 * intra + across, 1e-15);
  EXPECT_EQ(r.rounds, 3u + 1 + 1 + 3);
  in.schedule_rounds = 9;
  EXPECT_THROW((void)closed_form_time("hierarchical", in), ScheduleError) << "a schedule built for another node size";
  in.schedule_rounds = 0;
  in.n = 10;
  EXPECT_THROW((void)closed_form_time("hierarchical", in), ConfigError);
}

// Where the composition is not exact the engine refuses, naming the topology: an oversubscribed
// fabric, NICs shared by GPUs, the rows that have no formula, and flat rows on a cluster.
TEST(HierarchicalClosedForm, RefusesClustersWhereSharingCouldBind) {
  const Rank n = 16;
  const Schedule s = generate_schedule("hierarchical_rhd", AlgorithmOptions{n, {}, 0, 4});
  ClusterSpec over = spec_of(4);
  over.oversubscription = 2;
  EXPECT_NE(config_error(s, config(make_cluster(n, over, 0.0, "two_to_one"), 1 << 20)).find("'two_to_one'"),
            std::string::npos);
  ClusterSpec shared = spec_of(4);
  shared.nics_per_node = 2;
  EXPECT_NE(config_error(s, config(make_cluster(n, shared, 0.0, "shared"), 1 << 20)).find("'shared'"),
            std::string::npos);
  EXPECT_EQ(config_error(s, config(make_cluster(n, spec_of(4), 0.0, "ok"), 1 << 20)), "");
  const Schedule ring = generate_schedule("ring", AlgorithmOptions{n, {}, 0});
  EXPECT_NE(config_error(ring, config(make_cluster(n, spec_of(4), 0.0, "flat_on_cluster"), 1 << 20))
                .find("'flat_on_cluster'"),
            std::string::npos);
  const Schedule tree = generate_schedule("nccl_tree", AlgorithmOptions{n, {}, 0, 4});
  EXPECT_THROW((void)ClosedFormEngine().run(tree, config(make_cluster(n, spec_of(4), 0.0, "c"), 1 << 20)),
               ScheduleError);
}

}  // namespace
}  // namespace collsim
