// Clusters with fewer NICs than GPUs per node (cluster.nics_per_node): consecutive GPUs share a
// NIC, its links and its bandwidth; the link layout, routes, the YAML key and the engines.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/algorithms/verifier.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/topology.hpp"
#include "collsim/sim/replay_engine.hpp"
#include "sim_test_support.hpp"

#ifdef COLLSIM_HAVE_SIMGRID
#include "collsim/sim/simgrid_engine.hpp"
#endif

namespace collsim {
namespace {

using test::config;
using test::expect_rel;
using test::hand;
using test::tx;

template <class Fn>
std::string config_error(Fn fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// 4 GPUs and 2 NICs per node, 2 nodes per leaf.
ClusterSpec two_nics(double oversubscription = 1.0, bool rail_optimized = false) {
  ClusterSpec c;
  c.gpus_per_node = 4;
  c.nics_per_node = 2;
  c.nodes_per_leaf = 2;
  c.oversubscription = oversubscription;
  c.rail_optimized = rail_optimized;
  return c;
}

TEST(SharedNic, LinkLayoutAndRoutes) {
  const Topology t = make_cluster(16, two_nics(), 0.0, "c");
  t.check();
  ASSERT_EQ(t.num_nics(), 8u);
  ASSERT_EQ(t.num_leaves(), 2u);
  ASSERT_EQ(t.links.size(), 2u * 16 + 2 * 8 + 2 * 2);
  // GPUs 0 and 1 share NIC 0, GPUs 2 and 3 NIC 1; node 1's are NICs 2 and 3.
  EXPECT_EQ(t.nic_of(0), 0u);
  EXPECT_EQ(t.nic_of(1), 0u);
  EXPECT_EQ(t.nic_of(2), 1u);
  EXPECT_EQ(t.nic_of(3), 1u);
  EXPECT_EQ(t.nic_of(4), 2u);
  EXPECT_EQ(t.nic_of(15), 7u);
  // NIC up links at 2n + m, down at 2n + M + m, leaves after them.
  EXPECT_EQ(t.route(0, 1), (std::vector<std::uint32_t>{0, 16 + 1}));                // NVSwitch
  EXPECT_EQ(t.route(1, 6), (std::vector<std::uint32_t>{32 + 0, 40 + 3}));           // same leaf
  EXPECT_EQ(t.route(3, 9), (std::vector<std::uint32_t>{32 + 1, 48, 50 + 1, 40 + 4})); // via spine
  EXPECT_EQ(t.route(2, 9)[0], t.route(3, 9)[0]) << "GPUs 2 and 3 leave through one NIC";
  EXPECT_EQ(t.links[32].name, "node0_nic0_up");
  EXPECT_EQ(t.links[47].name, "node3_nic1_down");
  EXPECT_EQ(t.links[32].bandwidth_Bps, t.cluster.nic_bandwidth_Bps) << "nic_bandwidth is per NIC";
  EXPECT_EQ(t.links[48].bandwidth_Bps, 2 * 2 * t.cluster.nic_bandwidth_Bps);  // 4 NICs per leaf, 1:1
  EXPECT_EQ(t.route_latency_s(3, 9), t.cluster.network_latency_s);
  // Leaves never bind at 1:1, NICs can; a shared NIC is no one GPU's link.
  EXPECT_TRUE(t.non_blocking());
  EXPECT_TRUE(t.never_binding(48));
  EXPECT_FALSE(t.never_binding(47));
  EXPECT_FALSE(t.links_owned_by_endpoints());
  ClusterSpec own = two_nics();
  own.nics_per_node = 4;
  EXPECT_TRUE(make_cluster(16, own).links_owned_by_endpoints());
  EXPECT_EQ(make_cluster(16, own).links.size(), 4u * 16 + 2 * 2) << "one NIC per GPU keeps the old layout";

  // A partial last node has the NICs of its GPUs; rail-optimized leaves are per NIC.
  EXPECT_EQ(make_cluster(14, two_nics()).num_nics(), 7u);
  EXPECT_EQ(make_cluster(13, two_nics()).num_nics(), 7u);
  const Topology rail = make_cluster(16, two_nics(1.0, true), 0.0, "rail");
  ASSERT_EQ(rail.num_leaves(), 2u * 2);
  EXPECT_EQ(rail.leaf_of(1), 0u);
  EXPECT_EQ(rail.leaf_of(2), 1u);
  EXPECT_EQ(rail.leaf_of(5), 0u);  // node 1, NIC 0: same rail leaf
  EXPECT_EQ(rail.leaf_of(8), 2u);  // next group
  EXPECT_EQ(rail.links[2 * 16 + 2 * 8].bandwidth_Bps, 2 * rail.cluster.nic_bandwidth_Bps);  // 2 nodes per rail leaf
  const Topology over = make_cluster(16, two_nics(2.0), 0.0, "over");
  EXPECT_FALSE(over.never_binding(48));
  EXPECT_EQ(over.links[48].bandwidth_Bps, 2 * over.cluster.nic_bandwidth_Bps);
}

TEST(SharedNic, BadNicCountsAreRefusedNamingKeyValueAndLine) {
  ClusterSpec bad = two_nics();
  bad.nics_per_node = 3;
  const std::string made = config_error([&] { (void)make_cluster(16, bad, 0.0, "odd"); });
  EXPECT_NE(made.find("nics_per_node = 3 must divide gpus_per_node = 4"), std::string::npos) << made;
  EXPECT_NE(config_error([] { (void)make_nvswitch(4, test::kLink).nic_of(0); }), "");
  EXPECT_NE(config_error([] { (void)make_cluster(8, two_nics()).nic_of(8); }), "");

  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("collsim_shared_nic_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  const auto error_of = [&](const std::string& text) {
    const std::string path = (dir / "nics.yaml").string();
    std::ofstream(path) << text;
    return config_error([&] { (void)load_topology(path); });
  };
  const std::string three = error_of("kind: cluster\nn: 16\ncluster:\n  gpus_per_node: 8\n  nics_per_node: 3\n");
  EXPECT_NE(three.find("nics.yaml:5"), std::string::npos) << three;
  EXPECT_NE(three.find("'cluster.nics_per_node' = 3 must divide cluster.gpus_per_node = 8"), std::string::npos) << three;
  const std::string zero = error_of("kind: cluster\nn: 16\ncluster:\n  nics_per_node: 0\n");
  EXPECT_NE(zero.find("'cluster.nics_per_node' = '0' must be a whole number >= 1"), std::string::npos) << zero;
  // Past 2^32 - 1 the count was called "not a whole number"; it says what the limit is.
  const std::string huge = error_of("kind: cluster\nn: 4294967304\ncluster:\n  gpus_per_node: 8\n");
  EXPECT_NE(huge.find("nics.yaml:2: 'n' = '4294967304' is too large (at most 4294967295)"), std::string::npos) << huge;
  EXPECT_NE(error_of("kind: cluster\nn: 16\ncluster:\n  gpus_per_node: 4\n  nics_per_node: 8\n").find("must divide"),
            std::string::npos);
  EXPECT_EQ(error_of("kind: cluster\nn: 16\ncluster:\n  gpus_per_node: 4\n  nics_per_node: 2\n"), "");
  std::filesystem::remove_all(dir);
}

TEST(SharedNic, TheShippedFourNicClusterLoads) {
  const Topology t = load_topology("cluster_h100_1024_4nic");
  EXPECT_EQ(t.n, 1024u);
  EXPECT_EQ(t.cluster.nics(), 4u);
  EXPECT_EQ(t.num_nics(), 512u);
  EXPECT_EQ(t.cluster.nic_bandwidth_Bps, 50e9);  // 400 Gb/s per NIC
  EXPECT_TRUE(t.switch_reduction);
  EXPECT_EQ(t.nic_of(6), t.nic_of(7));
  EXPECT_NE(t.nic_of(5), t.nic_of(6));
}

// Two GPUs of a node send across the fabric through their one NIC: half its bandwidth each. A
// GPU alone on its NIC (its neighbour idle) gets all of it.
TEST(SharedNic, ReplaySharesANicBetweenItsGpus) {
  const Topology t = make_cluster(8, two_nics(), 0.0, "c");
  const double m = 1 << 26;
  const double lat = t.cluster.network_latency_s, bw = t.cluster.nic_bandwidth_Bps;
  ReplayEngine replay;
  const RunResult shared = replay.run(hand(8, 2, 1, {{{tx(0, 4, 0, 2), tx(1, 7, 0, 2)}}}), config(t, m));
  EXPECT_FALSE(replay.last_run_was_fast()) << "a shared NIC needs the event path";
  expect_rel(shared.time_s, lat + m / (bw / 2), "two GPUs on NIC 0");
  const RunResult apart = replay.run(hand(8, 2, 1, {{{tx(0, 4, 0, 2), tx(2, 7, 0, 2)}}}), config(t, m));
  expect_rel(apart.time_s, lat + m / bw, "GPUs 0 and 2 on NICs 0 and 1");
}

// The rail algorithms still verify (their schedules do not depend on the NICs) and run; replay
// and SimGrid agree on 1:1 and 2:1 fabrics with 2 NICs per 4 GPUs, a GPU late or not.
TEST(SharedNic, HierarchicalAlgorithmsAgreeBetweenReplayAndSimGrid) {
  ReplayEngine replay;
#ifdef COLLSIM_HAVE_SIMGRID
  const auto simgrid = make_simgrid_engine();
#endif
  int compared = 0;
  for (const AlgorithmInfo& info : all_algorithms()) {
    if (!info.hierarchical) continue;
    for (const Rank nodes : {2u, 3u, 5u}) {
      const Rank n = 4 * nodes;
      const Schedule s = generate_schedule(info.name, AlgorithmOptions{n, {}, 4, 4});
      ASSERT_TRUE(verify_schedule(s).empty()) << info.name;
      for (const double over : {1.0, 2.0}) {
        const Topology topo = test::reducing(make_cluster(n, two_nics(over), 1e-12, over > 1 ? "c2to1" : "c"));
        for (const double d : {0.0, 200e-6}) {
          std::vector<double> arrival(n, 0.0);
          arrival[n - 3] = d;
          const RunConfig c = config(topo, 3.0 * (1 << 24), StartMode::Eager, arrival);
          const RunResult a = replay.run(s, c);
          EXPECT_FALSE(replay.last_run_was_fast());
          const std::string what = std::string(info.name) + " n=" + std::to_string(n) + " " + topo.name +
                                   " d=" + std::to_string(d);
          // Sharing NICs cannot make anything faster than owning them.
          ClusterSpec own = two_nics(over);
          own.nics_per_node = 4;
          const RunResult b = replay.run(s, config(test::reducing(make_cluster(n, own, 1e-12, "own")), c.size_bytes,
                                                   StartMode::Eager, arrival));
          EXPECT_GE(a.time_s, b.time_s * (1 - 1e-12)) << what;
#ifdef COLLSIM_HAVE_SIMGRID
          const RunResult g = simgrid->run(s, c);
          expect_rel(g.time_s, a.time_s, what + " simgrid");
          for (Rank r = 0; r < n; ++r) expect_rel(g.finish_s[r], a.finish_s[r], what + " simgrid finish");
#endif
          ++compared;
        }
      }
    }
  }
  EXPECT_GE(compared, 5 * 3 * 2 * 2);
}

}  // namespace
}  // namespace collsim
