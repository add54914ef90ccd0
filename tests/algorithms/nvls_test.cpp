// NVLS: switch ranks in the schedule IR (schedule.hpp), as the verifier and the reference
// executor read them, and the nvls generator built on them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collsim/algorithms/reference_executor.hpp"
#include "collsim/algorithms/registry.hpp"
#include "collsim/algorithms/verifier.hpp"
#include "collsim/models/error.hpp"

namespace collsim {
namespace {

bool mentions(const std::vector<Diagnostic>& d, const std::string& text) {
  for (const auto& x : d) {
    if (x.message.find(text) != std::string::npos) return true;
  }
  return false;
}

std::string all_messages(const Schedule& s, const std::vector<Diagnostic>& d) {
  std::string text;
  for (const auto& x : d) text += format_diagnostic(s, x) + "\n";
  return text;
}

// n GPUs reduce their one chunk into switch rank n in round 0; the switch multicasts it in round 1.
Schedule reduce_then_multicast(Rank n) {
  Schedule s;
  s.algorithm = "test";
  s.n = n;
  s.num_chunks = 1;
  s.num_switch_ranks = 1;
  Phase& p = s.add_phase("nvls");
  p.begin_round();
  for (Rank g = 0; g < n; ++g) p.add(g, n, 0, 1, Op::Reduce);
  p.begin_round();
  for (Rank g = 0; g < n; ++g) p.add(n, g, 0, 1, Op::Copy);
  return s;
}

TEST(Nvls, VerifierAndReferenceAcceptTheGeneratedScheduleForManyNAndDepths) {
  for (Rank n = 2; n <= 16; ++n) {
    for (std::uint32_t chunks : {1u, 2u, 3u, 7u, 16u, 33u}) {
      const Schedule s = generate_schedule("nvls", AlgorithmOptions{n, {}, chunks});
      ASSERT_EQ(s.num_switch_ranks, 1u);
      ASSERT_EQ(s.num_chunks, chunks);
      ASSERT_EQ(s.num_rounds(), chunks + 1) << "reduce of chunk k overlaps the multicast of chunk k-1";
      const auto d = verify_schedule(s);
      ASSERT_TRUE(d.empty()) << "n=" << n << " C=" << chunks << "\n" << all_messages(s, d);
      const ReferenceResult r = execute_reference(s, 3);
      ASSERT_TRUE(r.correct) << "n=" << n << " C=" << chunks << ": " << r.first_mismatch;
    }
  }
}

TEST(Nvls, DefaultDepthIsTheRowsPipelineDepth) {
  const AlgorithmInfo& info = find_algorithm("nvls");
  EXPECT_TRUE(info.needs_switch_reduction);
  EXPECT_GT(info.default_pipeline_chunks, 1u);
  const Schedule s = generate_schedule("nvls", AlgorithmOptions{8, {}, 0});
  EXPECT_EQ(s.num_chunks, info.default_pipeline_chunks);
  // No other row reduces in the switch: their schedules keep num_switch_ranks = 0.
  for (const AlgorithmInfo& other : all_algorithms()) {
    if (other.needs_switch_reduction || other.hierarchical) continue;
    EXPECT_EQ(generate_schedule(other.name, AlgorithmOptions{8, {}, 0}).num_switch_ranks, 0u) << other.name;
  }
}

TEST(Nvls, ManyContributionsToOneSwitchChunkInOneRoundAreSummed) {
  const Schedule s = reduce_then_multicast(5);
  EXPECT_TRUE(verify_schedule(s).empty()) << all_messages(s, verify_schedule(s));
  EXPECT_TRUE(execute_reference(s, 4).correct);
}

TEST(Nvls, RejectsAMissingContribution) {
  Schedule s = reduce_then_multicast(4);
  // Rebuild round 0 without GPU 2's contribution.
  Schedule broken;
  broken.algorithm = "test";
  broken.n = 4;
  broken.num_chunks = 1;
  broken.num_switch_ranks = 1;
  Phase& p = broken.add_phase("nvls");
  p.begin_round();
  for (Rank g : {0u, 1u, 3u}) p.add(g, 4, 0, 1, Op::Reduce);
  p.begin_round();
  for (Rank g = 0; g < 4; ++g) p.add(4, g, 0, 1, Op::Copy);
  const auto d = verify_schedule(broken);
  EXPECT_TRUE(mentions(d, "discards contributions")) << all_messages(broken, d);
  EXPECT_TRUE(mentions(d, "holds contributions {0..1,3} instead of all 4")) << all_messages(broken, d);
  EXPECT_FALSE(execute_reference(broken).correct);
}

TEST(Nvls, RejectsADoubleContribution) {
  Schedule s = reduce_then_multicast(4);
  // GPU 1 contributes again in the same round ...
  Schedule twice = s;
  twice.phases[0] = Phase("nvls");
  twice.phases[0].begin_round();
  for (Rank g = 0; g < 4; ++g) twice.phases[0].add(g, 4, 0, 1, Op::Reduce);
  twice.phases[0].add(1, 4, 0, 1, Op::Reduce);
  twice.phases[0].begin_round();
  for (Rank g = 0; g < 4; ++g) twice.phases[0].add(4, g, 0, 1, Op::Copy);
  twice.ports = 2;  // the port limit is not what is tested here
  auto d = verify_schedule(twice);
  EXPECT_TRUE(mentions(d, "double contribution")) << all_messages(twice, d);
  EXPECT_FALSE(execute_reference(twice).correct);
  // ... or in a later round, into what the switch still holds (it has not multicast it yet).
  Schedule later = s;
  later.phases[0] = Phase("nvls");
  later.phases[0].begin_round();
  for (Rank g = 0; g < 4; ++g) later.phases[0].add(g, 4, 0, 1, Op::Reduce);
  later.phases[0].begin_round();
  later.phases[0].add(2, 4, 0, 1, Op::Reduce);
  later.phases[0].begin_round();
  for (Rank g = 0; g < 4; ++g) later.phases[0].add(4, g, 0, 1, Op::Copy);
  d = verify_schedule(later);
  EXPECT_TRUE(mentions(d, "switch rank 4 chunk 0 receives contributions {2} it already holds {0..3}"))
      << all_messages(later, d);
}

// The switch stores nothing it has multicast: after the multicast of chunk 0, GPU 1 alone
// reduces its (complete) chunk 0 into the switch again, which multicasts it: a new sum of what
// GPU 1 sent, not the old one added to it. Were the old sum kept, the verifier would report a
// double contribution and the reference executor would deliver twice the total.
TEST(Nvls, AContributionAfterAMulticastStartsANewSum) {
  Schedule s = reduce_then_multicast(4);
  s.phases[0].begin_round();
  s.phases[0].add(1, 4, 0, 1, Op::Reduce);
  s.phases[0].begin_round();
  for (Rank g : {0u, 2u, 3u}) s.phases[0].add(4, g, 0, 1, Op::Copy);
  const auto d = verify_schedule(s);
  EXPECT_TRUE(d.empty()) << all_messages(s, d);
  const ReferenceResult r = execute_reference(s, 3);
  EXPECT_TRUE(r.correct) << r.first_mismatch;
}

TEST(Nvls, RejectsTransfersThatBreakTheSwitchRules) {
  Schedule s = reduce_then_multicast(3);
  s.num_switch_ranks = 2;
  s.phases[0].begin_round();
  s.phases[0].add(0, 3, 0, 1, Op::Copy);    // copy into a switch
  s.phases[0].add(3, 1, 0, 1, Op::Reduce);  // reduce out of a switch
  s.phases[0].add(3, 4, 0, 1, Op::Reduce);  // switch to switch
  s.phases[0].add(2, 5, 0, 1, Op::Reduce);  // no rank 5
  const auto d = verify_schedule(s);
  EXPECT_TRUE(mentions(d, "a GPU sends to a switch rank with copy")) << all_messages(s, d);
  EXPECT_TRUE(mentions(d, "a switch rank sends with reduce")) << all_messages(s, d);
  EXPECT_TRUE(mentions(d, "two switch ranks exchange data")) << all_messages(s, d);
  EXPECT_TRUE(mentions(d, "rank out of range 0..4")) << all_messages(s, d);
}

TEST(Nvls, SwitchRanksHaveNoPortLimitButGpusKeepTheirs) {
  // The switch receives n and sends n in a round: fine. A GPU that also sends to a peer in the
  // round it contributes exceeds its one port.
  Schedule s = reduce_then_multicast(4);
  EXPECT_FALSE(mentions(verify_schedule(s), "port limit"));
  s.phases[0] = Phase("nvls");
  s.phases[0].begin_round();
  for (Rank g = 0; g < 4; ++g) s.phases[0].add(g, 4, 0, 1, Op::Reduce);
  s.phases[0].add(0, 1, 0, 1, Op::Copy);
  const auto d = verify_schedule(s);
  EXPECT_TRUE(mentions(d, "rank 0 sends more than 1 transfer(s) in one round")) << all_messages(s, d);
}

TEST(Nvls, EndCheckLooksAtGpuRanksOnly) {
  // After the multicast the switch still holds the sum; were it checked as a rank it would pass
  // anyway. A switch left holding nothing must not fail a correct AllReduce: here a plain
  // 2-GPU swap declares a switch rank it never uses.
  Schedule s;
  s.algorithm = "test";
  s.n = 2;
  s.num_chunks = 1;
  s.num_switch_ranks = 1;
  Phase& p = s.add_phase("swap");
  p.begin_round();
  p.add(0, 1, 0, 1, Op::Reduce);
  p.add(1, 0, 0, 1, Op::Reduce);
  EXPECT_TRUE(verify_schedule(s).empty()) << all_messages(s, verify_schedule(s));
  EXPECT_TRUE(execute_reference(s).correct);
}

TEST(Nvls, RelabellingKeepsSwitchRanks) {
  Schedule s = generate_schedule("nvls", AlgorithmOptions{4, {}, 2});
  s.relabel(std::vector<Rank>{3, 2, 1, 0});
  for (const Transfer& t : s.phases[0].transfers()) EXPECT_TRUE(t.src == 4 || t.dst == 4);
  EXPECT_TRUE(verify_schedule(s).empty());
}

TEST(Nvls, ConstraintRefusesTopologiesWhoseSwitchCannotReduceOrSeveralNodes) {
  const AlgorithmInfo& info = find_algorithm("nvls");
  EXPECT_EQ(info.unsupported_reason(8), "");
  NConstraintContext no_switch;
  no_switch.switch_reduction = false;
  EXPECT_NE(info.unsupported_reason(8, no_switch).find("switch_reduction"), std::string::npos);
  NConstraintContext nodes;
  nodes.switch_reduction = true;
  nodes.gpus_per_node = 8;
  EXPECT_EQ(info.unsupported_reason(8, nodes), "");
  EXPECT_NE(info.unsupported_reason(16, nodes).find("several nodes"), std::string::npos);
  // The context of a real topology.
  Topology a100 = make_nvswitch(8, LinkModel{}, "dgx_a100");
  EXPECT_FALSE(info.unsupported_reason(8, topology_context(a100)).empty());
  a100.switch_reduction = true;
  EXPECT_TRUE(info.unsupported_reason(8, topology_context(a100)).empty());
}

}  // namespace
}  // namespace collsim
