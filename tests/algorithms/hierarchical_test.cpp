#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/algorithms/reference_executor.hpp"
#include "collsim/algorithms/registry.hpp"
#include "collsim/algorithms/verifier.hpp"
#include "collsim/models/error.hpp"

namespace collsim {
namespace {

Schedule hierarchical(Rank n, std::uint32_t gpus_per_node, GeneratorFn generator = &generate_hierarchical) {
  AlgorithmOptions options;
  options.n = n;
  options.gpus_per_node = gpus_per_node;
  return generator(options);
}

TEST(Hierarchical, CorrectForManyNodeCountsAndNodeSizes) {
  for (const std::uint32_t g : {1u, 2u, 3u, 4u, 8u}) {
    for (std::uint32_t nodes = 1; nodes <= 13; ++nodes) {
      const Rank n = g * nodes;
      if (n < 2) continue;
      const Schedule s = hierarchical(n, g);
      const auto d = verify_schedule(s);
      ASSERT_TRUE(d.empty()) << "G=" << g << " nodes=" << nodes << ": " << format_diagnostic(s, d[0]);
      const auto ref = execute_reference(s, 2);
      ASSERT_TRUE(ref.correct) << "G=" << g << " nodes=" << nodes << ": " << ref.first_mismatch;
      // 2 (G-1) NVLink rounds and 2 (N-1) network rounds.
      EXPECT_EQ(s.num_rounds(), 2u * (g - 1) + 2u * (nodes - 1)) << "G=" << g << " nodes=" << nodes;

      const Schedule rhd = hierarchical(n, g, &generate_hierarchical_rhd);
      const auto rd = verify_schedule(rhd);
      ASSERT_TRUE(rd.empty()) << "rhd G=" << g << " nodes=" << nodes << ": " << format_diagnostic(rhd, rd[0]);
      const auto rref = execute_reference(rhd, 2);
      ASSERT_TRUE(rref.correct) << "rhd G=" << g << " nodes=" << nodes << ": " << rref.first_mismatch;
    }
  }
}

TEST(Hierarchical, RhdAcrossNodesTakesLogarithmicallyManyNetworkRounds) {
  // 16 nodes: 2 log2 16 = 8 network rounds instead of the ring's 30.
  const Schedule s = hierarchical(16 * 4, 4, &generate_hierarchical_rhd);
  std::size_t network = 0;
  for (const Phase& phase : s.phases) {
    if (phase.name().rfind("inter_", 0) == 0) network += phase.num_rounds();
    for (const Transfer& t : phase.transfers()) {
      if (phase.name().rfind("inter_", 0) == 0) {
        EXPECT_EQ(t.src % 4, t.dst % 4) << "leaves its rail";
      }
    }
  }
  EXPECT_EQ(network, 8u);
}

// On 2^k nodes the halving's largest exchanges are between neighbouring nodes (which share a
// leaf switch): the flat schedule's rank k runs on node bitreverse(k). Per node, the bytes sent
// to a partner d nodes away halve as d doubles: half the slice to the next node, a quarter two
// away, ... Without the reversal it is the other way round.
TEST(Hierarchical, RhdSendsTheLargestExchangesToNeighbouringNodes) {
  const std::uint32_t g = 2, nodes = 16;
  const Schedule s = hierarchical(nodes * g, g, &generate_hierarchical_rhd);
  std::vector<std::uint64_t> chunks_by_distance(nodes, 0);
  for (const Phase& phase : s.phases) {
    if (phase.name() != "inter_reduce_scatter") continue;
    for (const Transfer& t : phase.transfers()) {
      if (t.src == 0) chunks_by_distance[t.dst / g] += t.chunk_count;  // node 0's GPU 0
    }
  }
  EXPECT_EQ(chunks_by_distance[1], 8u);  // of 16 chunks in the slice
  EXPECT_EQ(chunks_by_distance[2], 4u);
  EXPECT_EQ(chunks_by_distance[4], 2u);
  EXPECT_EQ(chunks_by_distance[8], 1u);
}

// On any node count the ranks of the flat RHD are placed in the order of their exchanges, so the
// chunks it moves travel a short way between nodes on average: a fraction of what they travel
// with rank k on node k.
TEST(Hierarchical, RhdKeepsItsTrafficBetweenNearbyNodesOnAnyNodeCount) {
  const auto mean_distance = [](const Schedule& s, std::uint32_t g) {
    double moved = 0, weighted = 0;
    for (const Phase& phase : s.phases) {
      for (const Transfer& t : phase.transfers()) {
        const double d = std::abs(static_cast<double>(t.src / g) - static_cast<double>(t.dst / g));
        moved += t.chunk_count;
        weighted += d * t.chunk_count;
      }
    }
    return weighted / moved;
  };
  for (const std::uint32_t nodes : {12u, 16u, 25u, 45u, 96u, 200u}) {
    AlgorithmOptions flat_options;
    flat_options.n = nodes;
    const double flat = mean_distance(generate_recursive_halving_doubling(flat_options), 1);
    const Schedule s = hierarchical(nodes, 1, &generate_hierarchical_rhd);  // one GPU per node
    const double placed = mean_distance(s, 1);
    RecordProperty("nodes_" + std::to_string(nodes), std::to_string(placed) + " vs " + std::to_string(flat));
    EXPECT_LT(placed, flat / 2) << nodes << " nodes: " << placed << " against " << flat;
  }
}

TEST(Hierarchical, InterNodeTrafficStaysOnRails) {
  const std::uint32_t g = 4;
  const Schedule s = hierarchical(4 * g, g);
  for (const Phase& phase : s.phases) {
    const bool inter = phase.name().rfind("inter_", 0) == 0;
    for (const Transfer& t : phase.transfers()) {
      if (inter) {
        EXPECT_EQ(t.src % g, t.dst % g) << phase.name() << ": " << t.src << "->" << t.dst << " leaves its rail";
        EXPECT_NE(t.src / g, t.dst / g);
        EXPECT_EQ(t.chunk_count, 1u);
      } else {
        EXPECT_EQ(t.src / g, t.dst / g) << phase.name() << ": " << t.src << "->" << t.dst << " leaves its node";
        EXPECT_EQ(t.chunk_count, 4u);  // one slice of N = 4 chunks
      }
    }
  }
}

TEST(Hierarchical, RejectsANodeSizeThatDoesNotDivideN) {
  EXPECT_THROW(hierarchical(12, 8), ScheduleError);
  EXPECT_THROW(hierarchical(12, 0), ScheduleError);
  EXPECT_FALSE(hierarchical_unsupported(12, 8).empty());
  EXPECT_TRUE(hierarchical_unsupported(16, 8).empty());
}

}  // namespace
}  // namespace collsim
