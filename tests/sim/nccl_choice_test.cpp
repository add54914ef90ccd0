#include "collsim/sim/nccl_choice.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "collsim/algorithms/registry.hpp"
#include "collsim/sim/replay_engine.hpp"

namespace collsim {
namespace {

double replay_s(const std::string& algorithm, Rank n, double size, const Topology& topology, double launch_s) {
  RunConfig config;
  config.size_bytes = size;
  config.topology = topology;
  config.execution = ExecutionCosts{ExecutionStyle::Fused, launch_s};
  return make_replay_engine()->run(generate_schedule(algorithm, AlgorithmOptions{n, {}, 0}), config).time_s;
}

// Without protocol regimes the choice is the fastest candidate row under the run's own link: no
// candidate is faster, and the choice is one of the table's candidates.
TEST(NcclChoice, PicksTheFastestCandidateRow) {
  const LinkModel link{3e-6, 450e9, 0.0};
  for (const Rank n : {4u, 8u, 6u}) {
    for (const double size : {64.0, 65536.0, 1e9}) {
      const Topology topology = make_nvswitch(n, link);
      const NcclChoice c = choose_nccl(n, size, topology, nullptr, ExecutionCosts{ExecutionStyle::Fused, 5e-6});
      EXPECT_TRUE(find_algorithm(c.algorithm).nccl_candidate) << c.algorithm;
      EXPECT_EQ(c.protocol, "model");
      EXPECT_EQ(c.execution.style, ExecutionStyle::Fused);
      EXPECT_EQ(c.execution.launch_s, 5e-6);
      for (const auto& info : all_algorithms()) {
        if (!info.nccl_candidate || !info.unsupported_reason(n, topology_context(topology)).empty()) continue;
        EXPECT_LE(c.predicted_s, replay_s(std::string(info.name), n, size, topology, 5e-6) * (1 + 1e-12))
            << info.name << " n=" << n << " size=" << size;
      }
      EXPECT_DOUBLE_EQ(c.predicted_s, replay_s(c.algorithm, n, size, topology, 5e-6));
    }
  }
}

// NVLS is a candidate only where the switch reduces: on dgx_h100 it wins at 1 GiB (it moves
// half of ring's bytes per GPU), on a plain nvswitch it is never picked.
TEST(NcclChoice, NvlsOnlyWhereTheSwitchReduces) {
  const LinkModel link{3e-6, 450e9, 0.0};
  const Topology h100 = resolve_topology("dgx_h100", 8, link);
  ASSERT_TRUE(h100.switch_reduction);
  EXPECT_EQ(choose_nccl(8, 1e9, h100, nullptr, {}).algorithm, "nvls");
  for (const double size : {64.0, 1e6, 1e9}) {
    EXPECT_NE(choose_nccl(8, size, make_nvswitch(8, link), nullptr, {}).algorithm, "nvls") << size;
  }
}

// With a calibrated model, each protocol regime is a candidate protocol with its own link and
// launch: latency-bound sizes pick LL, bandwidth-bound ones a bandwidth protocol.
TEST(NcclChoice, ProtocolsComeFromTheModelRegimes) {
  const ModelFile model =
      read_model_file(std::filesystem::path(COLLSIM_SOURCE_DIR) / "configs" / "models" / "h100_nvswitch.yaml");
  ASSERT_EQ(model.regimes.size(), 3u);
  Topology topology = make_nvswitch(8, model.link);
  const NcclChoice small = choose_nccl(8, 64, topology, &model, {});
  EXPECT_EQ(small.protocol, "LL");
  EXPECT_EQ(small.execution.launch_s, model.regimes[0].launch_s);
  const NcclChoice large = choose_nccl(8, 1e9, topology, &model, {});
  EXPECT_NE(large.protocol, "LL");
  EXPECT_GT(large.topology.link.bandwidth_Bps, small.topology.link.bandwidth_Bps);
}

// NCCL runs NVLS with the Simple protocol only: under a model with LL and LL128 regimes the
// choice prices nvls under Simple alone, so it never answers "nvls, LL" (small sizes go to ring or
// tree with LL, large ones to nvls with Simple).
TEST(NcclChoice, NvlsOnlyWithTheSimpleProtocol) {
  const ModelFile model =
      read_model_file(std::filesystem::path(COLLSIM_SOURCE_DIR) / "configs" / "models" / "h100_nvswitch.yaml");
  ASSERT_TRUE(find_algorithm("nvls").nccl_simple_only);
  const Topology h100 = resolve_topology("dgx_h100", 8, model.link);
  bool picked_nvls = false;
  for (double size = 64; size <= (1ull << 32); size *= 4) {
    const NcclChoice c = choose_nccl(8, size, h100, &model, {});
    if (c.algorithm == "nvls") {
      picked_nvls = true;
      EXPECT_EQ(c.protocol, "Simple") << size;
    }
  }
  EXPECT_TRUE(picked_nvls);
  EXPECT_NE(choose_nccl(8, 64, h100, &model, {}).algorithm, "nvls");
}

// On a cluster NCCL's candidates are its cluster algorithms (multi-rail ring, tree, NVLS + tree)
// besides the flat rows: the choice is the fastest of every candidate the topology supports,
// each built for the topology's node size and sized for the buffer.
TEST(NcclChoice, OnAClusterPicksAmongTheHierarchicalCandidates) {
  const Topology cluster = resolve_topology("cluster_h100_1024", 32, LinkModel{});
  const double size = 1 << 28;
  const NcclChoice c = choose_nccl(32, size, cluster, nullptr, {});
  EXPECT_TRUE(find_algorithm(c.algorithm).hierarchical) << c.algorithm;
  const auto engine = make_replay_engine();
  int hierarchical_candidates = 0;
  for (const auto& info : all_algorithms()) {
    if (!info.nccl_candidate || !info.unsupported_reason(32, topology_context(cluster)).empty()) continue;
    hierarchical_candidates += info.hierarchical ? 1 : 0;
    AlgorithmOptions o;
    o.n = 32;
    o.gpus_per_node = gpus_per_node_of(cluster);
    set_sizing(o, cluster, size);
    RunConfig config;
    config.size_bytes = size;
    config.topology = cluster;
    const double t = engine->run(generate_schedule(info.name, o), config).time_s;
    EXPECT_LE(c.predicted_s, t * (1 + 1e-12)) << info.name;
    if (info.name == c.algorithm) {
      EXPECT_DOUBLE_EQ(c.predicted_s, t);
    }
  }
  EXPECT_EQ(hierarchical_candidates, 3);
}

TEST(NcclChoice, TheTableFlagsTheCandidatesAndTheChosenRow) {
  int candidates = 0, chosen = 0;
  for (const auto& info : all_algorithms()) {
    candidates += info.nccl_candidate ? 1 : 0;
    chosen += info.chosen_per_run ? 1 : 0;
    EXPECT_FALSE(info.nccl_candidate && info.chosen_per_run) << info.name;
  }
  EXPECT_GE(candidates, 2);
  EXPECT_EQ(chosen, 1);
  EXPECT_TRUE(find_algorithm("nccl").chosen_per_run);
}

}  // namespace
}  // namespace collsim
