// The algorithm table: every row is complete and its facts agree with what its generator and
// its closed form do, so code that reads the table instead of testing names gets true answers.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/closed_form.hpp"
#include "collsim/models/error.hpp"

namespace collsim {
namespace {

TEST(AlgorithmTable, RowsAreCompleteAndNamesUnique) {
  std::set<std::string_view> names;
  int studied = 0;
  for (const AlgorithmInfo& info : all_algorithms()) {
    EXPECT_TRUE(names.insert(info.name).second) << "duplicate row " << info.name;
    EXPECT_FALSE(info.summary.empty()) << info.name;
    EXPECT_FALSE(info.reference.empty()) << info.name;
    EXPECT_FALSE(info.supported_n.empty()) << info.name;
    EXPECT_NE(info.generate, nullptr) << info.name;
    EXPECT_NE(info.n_constraint, nullptr) << info.name;
    // A hierarchical row needs a node size: without one it supports no n.
    if (info.hierarchical) {
      EXPECT_FALSE(info.unsupported_reason(8).empty()) << info.name;
    }
    if (info.role == AlgorithmRole::Studied) ++studied;
  }
  // `collsim advise` compares a studied algorithm with the best baseline.
  EXPECT_GE(studied, 1);
  EXPECT_EQ(all_algorithms().front().role, AlgorithmRole::Studied);
  EXPECT_STREQ(algorithm_role_name(AlgorithmRole::Studied), "studied");
  EXPECT_STREQ(algorithm_role_name(AlgorithmRole::Baseline), "baseline");
}

// default_pipeline_chunks > 0 says the schedule's num_chunks is a pipeline depth, defaulting to
// the row's value; 0 says num_chunks follows from n alone. Hierarchical rows are built on nodes
// of two GPUs (4 and 7 nodes): with one GPU per node stragglar_cluster is flat StragglAR.
TEST(AlgorithmTable, PipelineDepthFactsMatchTheGenerators) {
  for (const AlgorithmInfo& info : all_algorithms()) {
    for (Rank nodes : {4u, 7u}) {
      const std::uint32_t node = info.hierarchical ? 2 : 0;
      const Rank n = info.hierarchical ? 2 * nodes : nodes;
      const Schedule by_default = generate_schedule(info.name, AlgorithmOptions{n, {}, 0, node});
      const Schedule deeper = generate_schedule(info.name, AlgorithmOptions{n, {}, 12, node});
      // A hierarchical row's depth is per slice: its buffer is one slice per GPU of a node (rail).
      const std::uint32_t slices = info.hierarchical ? node : 1;
      if (info.default_pipeline_chunks > 0) {
        EXPECT_EQ(by_default.num_chunks, slices * info.default_pipeline_chunks) << info.name << " n=" << n;
        EXPECT_EQ(deeper.num_chunks, slices * 12u) << info.name << " n=" << n;
      } else {
        EXPECT_EQ(deeper.num_chunks, by_default.num_chunks) << info.name << " n=" << n;
      }
    }
  }
}

// even_depth_because: an odd depth is refused by generate_schedule, naming the row and the depth,
// exactly for the rows that say so; the other pipelined rows build it.
TEST(AlgorithmTable, EvenDepthRuleIsTheRowsAndOnlyThere) {
  for (const AlgorithmInfo& info : all_algorithms()) {
    if (info.default_pipeline_chunks == 0) {
      EXPECT_TRUE(info.even_depth_because.empty()) << info.name << ": a depth rule on a row without a pipeline";
      continue;
    }
    const std::uint32_t node = info.hierarchical ? 2 : 0;
    const Rank n = info.hierarchical ? 8 : 4;
    EXPECT_NO_THROW(generate_schedule(info.name, AlgorithmOptions{n, {}, 6, node})) << info.name;
    if (info.even_depth_because.empty()) {
      EXPECT_EQ(generate_schedule(info.name, AlgorithmOptions{n, {}, 5, node}).num_chunks,
                (info.hierarchical ? node : 1) * 5u)
          << info.name;
      continue;
    }
    try {
      generate_schedule(info.name, AlgorithmOptions{n, {}, 5, node});
      ADD_FAILURE() << info.name << ": odd depth accepted";
    } catch (const ScheduleError& e) {
      EXPECT_EQ(std::string(e.what()), std::string(info.name) + ": pipeline_chunks = 5 must be even (" +
                                           std::string(info.even_depth_because) + ")");
    }
  }
}

// The `nccl` row's summary (collsim algorithms) names every candidate it picks among.
TEST(AlgorithmTable, NcclSummaryNamesEveryCandidate) {
  const AlgorithmInfo& nccl = find_algorithm("nccl");
  for (const AlgorithmInfo& info : all_algorithms()) {
    if (info.nccl_candidate) {
      EXPECT_NE(nccl.summary.find(info.name), std::string_view::npos) << info.name;
    }
  }
}

// straggler_aware: the schedule is built around the requested straggler, and only then.
TEST(AlgorithmTable, StragglerAwareFactMatchesTheGenerators) {
  for (const AlgorithmInfo& info : all_algorithms()) {
    const Schedule s = generate_schedule(info.name, AlgorithmOptions{6, Rank{2}, 0, info.hierarchical ? 3u : 0u});
    // Rows relabelled at run time stay built for n-1: the engines pick the late rank.
    EXPECT_EQ(s.straggler, !info.straggler_aware ? -1 : info.relabel_at_run_time ? 5 : 2) << info.name;
  }
}

// The constraint sees a node size; flat algorithms ignore it, except nvls, which reduces in one
// node's switch (nvls_test.cpp checks that).
TEST(AlgorithmTable, FlatRowsIgnoreTheNodeSize) {
  for (const AlgorithmInfo& info : all_algorithms()) {
    if (info.hierarchical || info.needs_switch_reduction) continue;
    for (Rank n : {2u, 6u, 9u}) {
      EXPECT_EQ(info.unsupported_reason(n, NConstraintContext{Rank{4}, {}}), info.unsupported_reason(n)) << info.name;
    }
  }
}

TEST(AlgorithmTable, ClosedFormByNameUsesTheRowAndItsDefaultDepth) {
  ClosedFormInput in;
  in.n = 8;
  in.size_bytes = 1 << 30;
  in.link = LinkModel{3e-6, 450e9, 0.0};
  in.delay_s = 1e-3;
  for (const AlgorithmInfo& info : all_algorithms()) {
    if (!info.has_closed_form()) continue;
    ClosedFormInput explicit_depth = in;
    explicit_depth.pipeline_chunks = info.default_pipeline_chunks;
    EXPECT_EQ(closed_form_time(info.name, in).time_s, info.closed_form(explicit_depth).time_s) << info.name;
  }
  EXPECT_THROW((void)closed_form_time("bogus", in), ConfigError);
  // The generated schedule's round count is what the formula reports.
  const Schedule binomial = generate_schedule("binomial_tree", AlgorithmOptions{8, {}, 0});
  EXPECT_EQ(closed_form_time("binomial_tree", in).rounds, binomial.num_rounds());
}

}  // namespace
}  // namespace collsim
