// nvls_tree in the engines: switch ranks of every node, NIC rails and the all-gather's second pass
// through the switch; replay's fast path, its event path and SimGrid agree.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"
#include "collsim/sim/replay_engine.hpp"
#include "sim_test_support.hpp"

#ifdef COLLSIM_HAVE_SIMGRID
#include "collsim/sim/simgrid_engine.hpp"
#endif

namespace collsim {
namespace {

using test::config;
using test::expect_rel;

Topology h100_cluster(Rank n, std::uint32_t gpus_per_node, double oversubscription) {
  ClusterSpec spec;
  spec.gpus_per_node = gpus_per_node;
  spec.nodes_per_leaf = 2;
  spec.oversubscription = oversubscription;
  Topology t = make_cluster(n, spec, 1e-12, oversubscription > 1 ? "c2to1" : "c");
  t.switch_reduction = true;
  return t;
}

// 1, 2, 3 and 5 nodes of 1, 2 and 4 GPUs, 1:1 and 2:1, a late GPU or none, both start modes.
TEST(NvlsTreeEngines, ReplayFastEventAndSimGridAgree) {
  ReplayEngine fast;
  ReplayEngine event(ReplayOptions{false, true});
#ifdef COLLSIM_HAVE_SIMGRID
  const auto simgrid = make_simgrid_engine();
#endif
  int compared = 0;
  for (const std::uint32_t g : {1u, 2u, 4u}) {
    for (const std::uint32_t nodes : {1u, 2u, 3u, 5u}) {
      const Rank n = g * nodes;
      if (n < 2) continue;
      for (const std::uint32_t pieces : {2u, 6u}) {
        const Schedule s = generate_schedule("nvls_tree", AlgorithmOptions{n, {}, pieces, g});
        for (const double over : {1.0, 2.0}) {
          const Topology topo = h100_cluster(n, g, over);
          for (const StartMode mode : {StartMode::Eager, StartMode::Barrier}) {
            for (const double d : {0.0, 300e-6}) {
              std::vector<double> arrival(n, 0.0);
              arrival[n / 2] = d;
              RunConfig c = config(topo, 3.0 * (1 << 24), mode, arrival);
              c.record_trace = true;
              const std::string what = "G=" + std::to_string(g) + " nodes=" + std::to_string(nodes) +
                                       " P=" + std::to_string(pieces) + " " + topo.name + " " +
                                       start_mode_name(mode) + " d=" + std::to_string(d);
              const RunResult a = fast.run(s, c);
              const RunResult b = event.run(s, c);
              ASSERT_FALSE(event.last_run_was_fast());
              expect_rel(b.time_s, a.time_s, what + " event");
              ASSERT_EQ(a.finish_s.size(), n) << "finish times are the GPUs' only";
              for (Rank r = 0; r < n; ++r) expect_rel(b.finish_s[r], a.finish_s[r], what + " event finish");
              ASSERT_EQ(a.trace.size(), s.num_transfers());
              for (std::size_t i = 0; i < a.trace.size(); ++i) expect_rel(b.trace[i].end_s, a.trace[i].end_s, what);
#ifdef COLLSIM_HAVE_SIMGRID
              const RunResult sg = simgrid->run(s, c);
              expect_rel(sg.time_s, a.time_s, what + " simgrid");
              for (Rank r = 0; r < n; ++r) expect_rel(sg.finish_s[r], a.finish_s[r], what + " simgrid finish");
#endif
              ++compared;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 150);
}

// A late GPU holds its node's switch, so the whole AllReduce: in barrier mode the time is the
// delay plus the time without one, on the shipped 2:1 H100 cluster too.
TEST(NvlsTreeEngines, RunsOnTheShippedClustersAndALateGpuDelaysEveryone) {
  for (const char* file : {"cluster_h100_1024", "cluster_h100_1024_2to1"}) {
    const Topology topo = load_topology(file, 64);
    ASSERT_TRUE(topo.switch_reduction) << file;
    AlgorithmOptions options{64, {}, 0, topo.cluster.gpus_per_node};
    set_sizing(options, topo, 1 << 28);
    const Schedule s = generate_schedule("nvls_tree", options);
    const RunResult on_time = ReplayEngine().run(s, config(topo, 1 << 28, StartMode::Barrier));
    std::vector<double> arrival(64, 0.0);
    arrival[13] = 30e-3;
    const RunResult late = ReplayEngine().run(s, config(topo, 1 << 28, StartMode::Barrier, arrival));
    expect_rel(late.time_s, 30e-3 + on_time.time_s, file);
    EXPECT_GT(on_time.time_s, 0.0);
  }
}

// On the shipped 2:1 leaf/spine cluster (16 nodes per leaf) the trees across nodes keep their
// edges below the leaves (in-order node numbers, tree_layout_test), so the oversubscribed spine
// costs them nothing at 64 nodes: the same time as on the 1:1 cluster. With the heap numbering
// most edges crossed the spine (nvls_tree 12.08 against 6.94 ms at 1,024 GPUs).
TEST(NvlsTreeEngines, TreesAcrossNodesStayBelowTheLeaves) {
  const Topology flat = load_topology("cluster_h100_1024", 512);
  const Topology over = load_topology("cluster_h100_1024_2to1", 512);
  for (const char* algorithm : {"nvls_tree", "nccl_tree", "stragglar_cluster"}) {
    AlgorithmOptions options{512, {}, 0, flat.cluster.gpus_per_node};
    set_sizing(options, flat, 1 << 30);
    const Schedule s = generate_schedule(algorithm, options);
    std::vector<double> arrival(512, 0.0);
    arrival[511] = 30e-3;
    const double flat_s = ReplayEngine().run(s, config(flat, 1 << 30, StartMode::Barrier, arrival)).time_s;
    const double over_s = ReplayEngine().run(s, config(over, 1 << 30, StartMode::Barrier, arrival)).time_s;
    expect_rel(over_s, flat_s, algorithm);
  }
  // hierarchical_rhd's halving sends its large exchanges to neighbouring nodes, so the spine
  // costs it 0.6 % here (39.87 against 39.62 ms; far partners first took 43.65 ms).
  AlgorithmOptions options{512, {}, 0, flat.cluster.gpus_per_node};
  const Schedule rhd = generate_schedule("hierarchical_rhd", options);
  std::vector<double> arrival(512, 0.0);
  arrival[511] = 30e-3;
  const double flat_s = ReplayEngine().run(rhd, config(flat, 1 << 30, StartMode::Barrier, arrival)).time_s;
  const double over_s = ReplayEngine().run(rhd, config(over, 1 << 30, StartMode::Barrier, arrival)).time_s;
  EXPECT_LT(over_s, 1.01 * flat_s);
}

TEST(NvlsTreeEngines, ClustersWhoseSwitchCannotReduceAreRefusedNamingTheKey) {
  ClusterSpec spec;
  spec.gpus_per_node = 4;
  const Topology plain = make_cluster(8, spec, 0.0, "plain");
  const Schedule s = generate_schedule("nvls_tree", AlgorithmOptions{8, {}, 2, 4});
  try {
    (void)ReplayEngine().run(s, config(plain, 1 << 20));
    FAIL() << "a cluster without switch_reduction ran nvls_tree";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("switch_reduction"), std::string::npos) << e.what();
  }
  const AlgorithmInfo& info = find_algorithm("nvls_tree");
  EXPECT_NE(info.unsupported_reason(8, topology_context(plain)).find("switch_reduction"), std::string::npos);
}

}  // namespace
}  // namespace collsim
