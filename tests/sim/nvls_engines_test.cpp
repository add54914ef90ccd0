// NVLS in the engines: switch ranks walk their rounds like GPUs (the multicast waits for every
// contribution), cost no launch and no reduction, and every engine and the closed form agree.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/closed_form.hpp"
#include "collsim/models/error.hpp"
#include "collsim/sim/closed_form_engine.hpp"
#include "collsim/sim/metrics.hpp"
#include "collsim/sim/replay_engine.hpp"
#include "collsim/sim/schedule_cost.hpp"
#include "collsim/sim/trace_writer.hpp"
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

constexpr double kAlpha = 3e-6;
constexpr double kB = 450.0 * 1024 * 1024 * 1024;

// An H100-like star whose switch reduces.
Topology nvls_star(Rank n, double gamma = 0.0) {
  Topology t = make_nvswitch(n, LinkModel{kAlpha, kB, gamma}, "h100_star");
  t.switch_reduction = true;
  return t;
}

std::string config_error(Engine& engine, const Schedule& s, const RunConfig& c) {
  try {
    (void)engine.run(s, c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// (C + 1) rounds of alpha/2 + (s/C) beta after the last arrival: checked against the formula by
// hand once, so that a formula and an engine that drift together still fail.
TEST(NvlsEngines, ReplayMatchesTheHandFormula) {
  const Rank n = 8;
  const std::uint32_t chunks = 4;
  const double size = 1 << 30;
  const Schedule s = generate_schedule("nvls", AlgorithmOptions{n, {}, chunks});
  std::vector<double> arrival(n, 0.0);
  arrival[3] = 1e-3;
  const RunResult r = ReplayEngine().run(s, config(nvls_star(n), size, StartMode::Eager, arrival));
  const double t = kAlpha / 2 + size / chunks / kB;
  expect_rel(r.time_s, 1e-3 + 5 * t, "late rank 3");
  ASSERT_EQ(r.finish_s.size(), n) << "finish times are the GPUs' only";
}

// Replay's fast path, its event path, SimGrid and the closed form, with and without a late rank
// (any rank: the switch makes the schedule symmetric), in both start modes, with and without
// reduction cost (which the switch does not pay), for several n and depths.
TEST(NvlsEngines, AllEnginesAndTheClosedFormAgree) {
  ReplayEngine fast;
  ReplayEngine event(ReplayOptions{false, true});
#ifdef COLLSIM_HAVE_SIMGRID
  const auto simgrid = make_simgrid_engine();
#endif
  int compared = 0;
  for (Rank n : {2u, 3u, 8u, 13u}) {
    for (std::uint32_t chunks : {0u, 1u, 5u}) {
      const Schedule s = generate_schedule("nvls", AlgorithmOptions{n, {}, chunks});
      for (double gamma : {0.0, 1.0 / 200e9}) {
        for (StartMode mode : {StartMode::Eager, StartMode::Barrier}) {
          for (Rank late : {n, 0u, n - 1}) {  // n = nobody late
            for (double d : {0.0, 2e-6, 3e-3}) {
              if ((late == n) != (d == 0.0)) continue;
              std::vector<double> arrival(n, 0.0);
              if (late < n) arrival[late] = d;
              RunConfig c = config(nvls_star(n, gamma), 3.0 * (1 << 26), mode, arrival);
              c.record_trace = true;
              const std::string what = "n=" + std::to_string(n) + " C=" + std::to_string(s.num_chunks) +
                                       " late=" + std::to_string(late) + " d=" + std::to_string(d) + " " +
                                       start_mode_name(mode) + " gamma=" + std::to_string(gamma);
              const RunResult a = fast.run(s, c);
              ASSERT_TRUE(fast.last_run_was_fast()) << "each link carries one transfer per round: " << what;
              const RunResult b = event.run(s, c);
              ASSERT_FALSE(event.last_run_was_fast());
              expect_rel(b.time_s, a.time_s, what + " event");
              ASSERT_EQ(a.trace.size(), s.num_transfers());
              ASSERT_EQ(b.trace.size(), s.num_transfers());
              for (std::size_t i = 0; i < a.trace.size(); ++i) expect_rel(b.trace[i].end_s, a.trace[i].end_s, what);
              const RunResult f = ClosedFormEngine().run(s, c);
              expect_rel(f.time_s, a.time_s, what + " closed form");
#ifdef COLLSIM_HAVE_SIMGRID
              const RunResult g = simgrid->run(s, c);
              expect_rel(g.time_s, a.time_s, what + " simgrid");
              ASSERT_EQ(g.finish_s.size(), n);
              for (Rank r = 0; r < n; ++r) expect_rel(g.finish_s[r], a.finish_s[r], what + " simgrid finish");
#endif
              ++compared;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 100);
}

// The closed form evaluated directly (not through the engine) equals replay at the row's
// default depth on the shipped dgx_h100 file, with and without a 1 ms straggler.
TEST(NvlsEngines, ClosedFormOnTheShippedDgxH100) {
  const Topology h100 = load_topology("dgx_h100");
  ASSERT_TRUE(h100.switch_reduction) << "dgx_h100.yaml declares switch_reduction: true";
  // NCCL's NVLS bandwidth model on Hopper: nvlsEfficiency 0.85 x (16 - 1) / 16 channels.
  EXPECT_DOUBLE_EQ(h100.switch_reduction_efficiency, 0.85 * 15 / 16);
  const Schedule s = generate_schedule("nvls", AlgorithmOptions{8, {}, 0});
  for (double d : {0.0, 1e-3}) {
    std::vector<double> arrival(8, 0.0);
    arrival[5] = d;
    const RunResult r = ReplayEngine().run(s, config(h100, 1 << 30, StartMode::Eager, arrival));
    ClosedFormInput in;
    in.n = 8;
    in.size_bytes = 1 << 30;
    in.link = h100.link;
    in.delay_s = d;
    in.switch_efficiency = h100.switch_reduction_efficiency;
    const ClosedFormResult f = closed_form_time("nvls", in);
    expect_rel(f.time_s, r.time_s, "d=" + std::to_string(d));
    EXPECT_EQ(f.rounds, s.num_rounds());
  }
}

TEST(NvlsEngines, EveryEngineRefusesASwitchThatCannotReduceNamingTheKey) {
  const Topology a100 = load_topology("dgx_a100");
  ASSERT_FALSE(a100.switch_reduction);
  const Schedule s = generate_schedule("nvls", AlgorithmOptions{8, {}, 0});
  const RunConfig c = config(a100, 1 << 20);
  ReplayEngine replay;
  ClosedFormEngine closed;
  std::vector<Engine*> engines{&replay, &closed};
#ifdef COLLSIM_HAVE_SIMGRID
  const auto simgrid = make_simgrid_engine();
  engines.push_back(simgrid.get());
#endif
  for (Engine* engine : engines) {
    const std::string e = config_error(*engine, s, c);
    EXPECT_NE(e.find("'dgx_a100'"), std::string::npos) << engine->name() << ": " << e;
    EXPECT_NE(e.find("switch_reduction"), std::string::npos) << engine->name() << ": " << e;
  }
  // The generic star built from --alpha/--bandwidth declares nothing, so it refuses too;
  // full_mesh and dgx1 have no switch at all.
  EXPECT_NE(config_error(replay, s, config(make_nvswitch(8, LinkModel{}), 1 << 20)).find("switch_reduction"),
            std::string::npos);
  EXPECT_NE(config_error(replay, s, config(make_full_mesh(8, LinkModel{}), 1 << 20)).find("switch_reduction"),
            std::string::npos);
  EXPECT_NE(config_error(replay, s, config(make_dgx1(8, LinkModel{}), 1 << 20)).find("switch_reduction"),
            std::string::npos);
}

TEST(NvlsEngines, RoutesUseOneLinkOfTheGpuAndOnlyItsOwnNodesSwitch) {
  const Topology star = nvls_star(4);
  EXPECT_EQ(star.route(2, 4), (std::vector<std::uint32_t>{2}));      // up link of GPU 2
  EXPECT_EQ(star.route(4, 2), (std::vector<std::uint32_t>{4 + 2}));  // down link of GPU 2
  EXPECT_THROW((void)star.route(4, 5), ConfigError);
  EXPECT_THROW((void)star.route(5, 1), ConfigError);  // one switch only
  ClusterSpec spec;
  spec.gpus_per_node = 4;
  Topology cluster = make_cluster(8, spec, 0.0, "c");
  EXPECT_THROW((void)cluster.route(1, 8), ConfigError);  // cannot reduce: not declared
  cluster.switch_reduction = true;
  EXPECT_EQ(cluster.route(5, 9), (std::vector<std::uint32_t>{5}));        // node 1's switch
  EXPECT_EQ(cluster.route(9, 5), (std::vector<std::uint32_t>{8 + 5}));
  try {
    (void)cluster.route(1, 9);
    ADD_FAILURE() << "GPU 1 is not on node 1";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("GPU 1 is on the switch of node 0 (rank 8)"), std::string::npos) << e.what();
  }
}

TEST(NvlsEngines, RunsInsideOneNodeOfAnH100Cluster) {
  Topology cluster = load_topology("cluster_h100_1024", 8);
  ASSERT_TRUE(cluster.switch_reduction);
  const Schedule s = generate_schedule("nvls", AlgorithmOptions{8, {}, 4});
  std::vector<double> arrival(8, 0.0);
  arrival[7] = 1e-4;
  const RunConfig c = config(cluster, 1 << 28, StartMode::Eager, arrival);
  const RunResult r = ReplayEngine().run(s, c);
  // Every switch transfer moves at the switch's efficiency times the NVLink bandwidth.
  const double t = cluster.cluster.nvlink_latency_s / 2 +
                   (1 << 28) / 4.0 / (cluster.cluster.nvlink_bandwidth_Bps * cluster.switch_reduction_efficiency);
  expect_rel(r.time_s, 1e-4 + 5 * t, "one DGX H100 node");
  expect_rel(ReplayEngine(ReplayOptions{false, true}).run(s, c).time_s, r.time_s, "event path");
#ifdef COLLSIM_HAVE_SIMGRID
  // The cluster's platform is a full zone with a one-link route to and from the switch host.
  expect_rel(make_simgrid_engine()->run(s, c).time_s, r.time_s, "simgrid");
#endif
}

// A switch rank pays no launch: GPU 0 reduces into the switch in round 0 and the switch
// multicasts to GPU 1 in round 1. With a launch per round, GPU 1 enters at L and the switch's
// round 1 starts when GPU 0's data is in, at L + t, not L + t + L.
TEST(NvlsEngines, SwitchRanksPayNoLaunchAndNoReductionCost) {
  Schedule s = hand(2, 1, 1, {{{tx(0, 2, 0, 1, Op::Reduce)}, {tx(2, 1)}}});
  s.num_switch_ranks = 1;
  const double size = 1 << 20;
  const double t = kAlpha / 2 + size / kB;
  for (ExecutionStyle style : {ExecutionStyle::P2pRounds, ExecutionStyle::Fused}) {
    RunConfig c = config(nvls_star(2, 1e-9), size);
    c.execution = ExecutionCosts{style, 5e-6};
    for (bool allow_fast : {true, false}) {
      ReplayEngine replay(ReplayOptions{allow_fast, true});
      const RunResult r = replay.run(s, c);
      expect_rel(r.time_s, 5e-6 + 2 * t, std::string(execution_style_name(style)) + (allow_fast ? " fast" : " event"));
    }
  }
}

TEST(NvlsEngines, TraceAndMetricsNameTheSwitch) {
  const Schedule s = generate_schedule("nvls", AlgorithmOptions{4, {}, 2});
  RunConfig c = config(nvls_star(4), 1 << 20);
  c.record_trace = true;
  const RunResult r = ReplayEngine().run(s, c);
  const std::string json = chrome_trace_json(s, r, {}, 1 << 20);
  EXPECT_NE(json.find("\"NVSwitch 0\""), std::string::npos);
  EXPECT_NE(json.find("\"GPU 3\""), std::string::npos);
  const RunMetrics m = compute_metrics(r, std::vector<double>(4, 0.0), 1 << 20, 4);
  ASSERT_EQ(m.busy_s.size(), 4u);
  EXPECT_GT(m.busy_s[0], 0.0);
}

// The calibration cost walk counts NVLS's critical path: C + 1 half-latencies and C + 1 chunks.
TEST(NvlsEngines, CostWalkCountsHalfLatenciesAndNoReduction) {
  const std::uint32_t chunks = 6;
  const Schedule s = generate_schedule("nvls", AlgorithmOptions{8, {}, chunks});
  const double size = 6 << 20;
  const CostCoefficients k = schedule_cost_coefficients(s, size, LinkModel{kAlpha, kB, 0.0});
  EXPECT_NEAR(k.latency, (chunks + 1) / 2.0, 1e-12);
  EXPECT_NEAR(k.bytes, (chunks + 1) * size / chunks, 1e-6);
  EXPECT_EQ(k.reduce_bytes, 0.0) << "the switch reduces, no GPU does";
}

// The topology key: set where the switch reduces, false where it cannot or is not said, and
// refused on kinds without a switch or with a value other than true/false (naming the key).
TEST(NvlsTopology, SwitchReductionKey) {
  for (const char* name : {"dgx_h100", "nvl72"}) EXPECT_TRUE(load_topology(name).switch_reduction) << name;
  for (const char* name : {"cluster_h100_1024", "cluster_h100_4096", "cluster_h100_1024_2to1"}) {
    EXPECT_TRUE(load_topology(name, 64).switch_reduction) << name;
  }
  EXPECT_FALSE(load_topology("dgx_a100").switch_reduction);
  EXPECT_FALSE(load_topology("dgx1").switch_reduction);
  EXPECT_FALSE(load_topology("nvswitch", 8).switch_reduction) << "absent = false";
  EXPECT_FALSE(load_topology("full_mesh", 8).switch_reduction);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("collsim_nvls_topology_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  const auto error_of = [&](const std::string& text) -> std::string {
    const std::string path = (dir / "t.yaml").string();
    std::ofstream(path) << text;
    try {
      (void)load_topology(path);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of("kind: nvswitch\nn: 4\nswitch_reduction: true\n"), "");
  const std::string mesh = error_of("kind: full_mesh\nn: 4\nswitch_reduction: true\n");
  EXPECT_NE(mesh.find("'switch_reduction' = true needs an NVSwitch"), std::string::npos) << mesh;
  EXPECT_NE(mesh.find(":3"), std::string::npos) << "the line: " << mesh;
  const std::string word = error_of("kind: nvswitch\nn: 4\nswitch_reduction: yes please\n");
  EXPECT_NE(word.find("'switch_reduction' = 'yes please' must be true or false"), std::string::npos) << word;
  EXPECT_EQ(error_of("kind: full_mesh\nn: 4\nswitch_reduction: false\n"), "");
  // The efficiency: only with a reducing switch, in (0, 1], default 1.
  EXPECT_EQ(load_topology("nvswitch", 8).switch_reduction_efficiency, 1.0);
  EXPECT_EQ(error_of("kind: nvswitch\nn: 4\nswitch_reduction: true\nswitch_reduction_efficiency: 0.5\n"), "");
  const std::string alone = error_of("kind: nvswitch\nn: 4\nswitch_reduction_efficiency: 0.5\n");
  EXPECT_NE(alone.find("'switch_reduction_efficiency' needs 'switch_reduction: true'"), std::string::npos) << alone;
  EXPECT_NE(alone.find(":3"), std::string::npos) << "the line: " << alone;
  // Below 0.1 % is a typo: 1e-300 ran and printed a 2e297 s AllReduce.
  for (const char* bad : {"0", "1.5", "-0.2", "1e-300", "0.0009"}) {
    const std::string e =
        error_of(std::string("kind: nvswitch\nn: 4\nswitch_reduction: true\nswitch_reduction_efficiency: ") + bad + "\n");
    EXPECT_NE(e.find("must be in [0.001, 1]"), std::string::npos) << bad << ": " << e;
  }
  const std::string word2 = error_of("kind: nvswitch\nn: 4\nswitch_reduction: true\nswitch_reduction_efficiency: high\n");
  EXPECT_NE(word2.find("is not a number"), std::string::npos) << word2;
  std::filesystem::remove_all(dir);
}


// The switch efficiency slows only transfers to and from a switch rank, by exactly 1/efficiency
// on their bytes, in every engine (closed form included); GPU-to-GPU transfers keep the line rate.
TEST(NvlsEngines, SwitchEfficiencyStretchesOnlySwitchTransfers) {
  Topology h100 = load_topology("dgx_h100");
  const double size = 1 << 26;
  const Schedule nvls = generate_schedule("nvls", AlgorithmOptions{8, {}, 4});
  const Schedule ring = generate_schedule("ring", AlgorithmOptions{8, {}, 0});
  std::vector<Engine*> engines;
  ReplayEngine replay;
  ReplayEngine event(ReplayOptions{false, true});
  ClosedFormEngine closed;
  engines = {&replay, &event, &closed};
#ifdef COLLSIM_HAVE_SIMGRID
  const auto simgrid = make_simgrid_engine();
  engines.push_back(simgrid.get());
#endif
  for (Engine* e : engines) {
    h100.switch_reduction_efficiency = 1.0;
    const double full_nvls = e->run(nvls, config(h100, size)).time_s;
    const double full_ring = e->run(ring, config(h100, size)).time_s;
    h100.switch_reduction_efficiency = 0.5;
    const double half_nvls = e->run(nvls, config(h100, size)).time_s;
    const double t_full = h100.link.latency_s / 2 + size / 4 / h100.link.bandwidth_Bps;
    const double t_half = h100.link.latency_s / 2 + size / 4 / (0.5 * h100.link.bandwidth_Bps);
    expect_rel(full_nvls, 5 * t_full, "efficiency 1");
    expect_rel(half_nvls, 5 * t_half, "efficiency 0.5");
    expect_rel(e->run(ring, config(h100, size)).time_s, full_ring, "ring ignores the switch efficiency");
  }
}

// The nvls pipeline depth follows the buffer once its size is known: the optimum
// sqrt(2 s / (alpha B_eff)) of (C + 1)(alpha/2 + s/(C B_eff)), never below 16 (NCCL's NVLS
// channels); 16 without a size.
TEST(NvlsEngines, PipelineDepthFollowsTheBuffer) {
  const Topology h100 = load_topology("dgx_h100");
  const auto depth = [&](double size) {
    AlgorithmOptions o;
    o.n = 8;
    if (size > 0) set_sizing(o, h100, size);
    return generate_schedule("nvls", o).num_chunks;
  };
  EXPECT_EQ(depth(0), 16u);
  EXPECT_EQ(depth(1 << 20), 16u);
  const double s = 1 << 30;
  const double best = std::sqrt(2 * s / (h100.link.latency_s * h100.link.bandwidth_Bps * h100.switch_reduction_efficiency));
  EXPECT_EQ(depth(s), static_cast<std::uint32_t>(std::round(best)));
  EXPECT_GT(depth(s), 16u);
  EXPECT_LE(depth(1e15), 1024u);
}

}  // namespace
}  // namespace collsim
