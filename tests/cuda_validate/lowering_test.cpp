#include <gtest/gtest.h>

#include <map>

#include "collsim/cuda_validate/lowering.hpp"
#include "cuda_test_support.hpp"

namespace collsim::cuda_validate {
namespace {

Schedule make_swap_schedule() {
  Schedule s;
  s.algorithm = "swap";
  s.n = 2;
  s.num_chunks = 1;
  Phase& p = s.add_phase("swap");
  p.begin_round();
  p.add(0, 1, 0, 1, Op::Copy);
  p.add(1, 0, 0, 1, Op::Copy);
  return s;
}

TEST(Lowering, RingOfTwoProgram) {
  const Schedule ring = generate_schedule("ring", AlgorithmOptions{2, {}, 0});
  const LoweredSchedule lowered = lower_schedule(ring, LoweringOptions{8, true, ""});
  EXPECT_EQ(lowered.num_rounds, 2u);
  EXPECT_EQ(lowered.num_sends(), 4u);
  EXPECT_EQ(format_program(lowered, 0),
            "round 0: send to 1 [4, 8)\n"
            "round 0: recv from 1 [0, 4) -> scratch 0\n"
            "round 0: reduce scratch 0 into [0, 4)\n"
            "round 1: send to 1 [0, 4)\n"
            "round 1: recv from 1 [4, 8) in place\n");
  EXPECT_EQ(lowered.programs[0].scratch_elements, 4u);

  const LoweredSchedule staged = lower_schedule(ring, LoweringOptions{8, false, ""});
  EXPECT_EQ(format_program(staged, 1),
            "round 0: recv from 0 [4, 8) -> scratch 0\n"
            "round 0: send to 0 [0, 4)\n"
            "round 0: reduce scratch 0 into [4, 8)\n"
            "round 1: recv from 0 [0, 4) -> scratch 0\n"
            "round 1: send to 0 [4, 8)\n"
            "round 1: copy scratch 0 into [0, 4)\n");
  EXPECT_THROW(format_program(staged, 2), ConfigError);
}

TEST(Lowering, ACopyIntoARangeTheStepSendsGoesThroughScratch) {
  const LoweredSchedule lowered = lower_schedule(make_swap_schedule(), LoweringOptions{5, true, ""});
  for (Rank r = 0; r < 2; ++r) {
    ASSERT_EQ(lowered.programs[r].steps.size(), 1u);
    const Step& step = lowered.programs[r].steps[0];
    ASSERT_EQ(step.apply_ops.size(), 1u) << "the swap must not receive in place";
    EXPECT_EQ(step.apply_ops[0].op, Op::Copy);
    EXPECT_EQ(lowered.programs[r].scratch_elements, 5u);
  }
}

TEST(Lowering, ScratchSlotsAreAlignedAndSized) {
  Schedule s;
  s.algorithm = "fan_in";
  s.n = 3;
  s.num_chunks = 3;
  s.ports = 2;
  Phase& p = s.add_phase("fan_in");
  p.begin_round();
  p.add(1, 0, 1, 1, Op::Reduce);
  p.add(2, 0, 2, 1, Op::Reduce);
  const LoweredSchedule lowered = lower_schedule(s, LoweringOptions{120, true, ""});
  const Step& step = lowered.programs[0].steps.at(0);
  ASSERT_EQ(step.apply_ops.size(), 2u);
  EXPECT_EQ(step.apply_ops[0].scratch_offset, 0u);
  EXPECT_EQ(step.apply_ops[1].scratch_offset, kScratchAlignElements);
  EXPECT_EQ(lowered.programs[0].scratch_elements, kScratchAlignElements + 40);
  EXPECT_EQ(lowered.programs[1].scratch_elements, 0u);
  EXPECT_EQ(lowered.max_scratch_elements(), kScratchAlignElements + 40);
}

TEST(Lowering, EmptyChunksAreDroppedOnBothEnds) {
  const Schedule ring = generate_schedule("ring", AlgorithmOptions{8, {}, 0});
  const LoweredSchedule lowered = lower_schedule(ring, LoweringOptions{12, true, ""});  // 3 units of 4
  std::map<std::pair<Rank, Rank>, int> balance;
  std::size_t sends = 0;
  for (Rank r = 0; r < 8; ++r) {
    for (const Step& step : lowered.programs[r].steps) {
      ASSERT_FALSE(step.peer_ops.empty());
      for (const PeerOp& op : step.peer_ops) {
        ASSERT_GT(op.range.count, 0u);
        if (op.kind == PeerOp::Kind::Send) {
          ++balance[{r, op.peer}];
          ++sends;
        } else {
          --balance[{op.peer, r}];
        }
      }
    }
  }
  for (const auto& [pair, b] : balance) EXPECT_EQ(b, 0) << pair.first << "->" << pair.second;
  EXPECT_EQ(sends, lowered.num_sends());
  // Only chunks 0..2 hold data: each is reduced 7 times and forwarded 7 times.
  EXPECT_EQ(sends, 3u * 7u * 2u);
}

// A schedule with switch ranks (nvls) would index GPU buffers past n: lowering refuses it.
TEST(Lowering, RefusesSwitchReductions) {
  const Schedule s = generate_schedule("nvls", AlgorithmOptions{4, {}, 2});
  try {
    (void)lower_schedule(s, LoweringOptions{64, true, ""});
    FAIL() << "a switch reduction was lowered";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("reduces in the NVSwitch"), std::string::npos) << e.what();
  }
}

TEST(Lowering, RejectsMalformedSchedules) {
  const auto one_transfer = [](Rank src, Rank dst, std::uint32_t chunk) {
    Schedule s;
    s.algorithm = "bad";
    s.n = 2;
    s.num_chunks = 2;
    Phase& p = s.add_phase("p");
    p.begin_round();
    p.add(src, dst, chunk, 1, Op::Copy);
    return s;
  };
  EXPECT_THROW(lower_schedule(one_transfer(0, 0, 0), LoweringOptions{8, true, ""}), ScheduleError);
  EXPECT_THROW(lower_schedule(one_transfer(0, 2, 0), LoweringOptions{8, true, ""}), ScheduleError);
  EXPECT_THROW(lower_schedule(one_transfer(0, 1, 2), LoweringOptions{8, true, ""}), ScheduleError);
  EXPECT_NO_THROW(lower_schedule(one_transfer(0, 1, 1), LoweringOptions{8, true, ""}));

  Schedule overlap;
  overlap.algorithm = "overlap";
  overlap.n = 3;
  overlap.num_chunks = 3;
  overlap.ports = 2;
  Phase& p = overlap.add_phase("p");
  p.begin_round();
  p.add(1, 0, 0, 2, Op::Reduce);
  p.add(2, 0, 1, 1, Op::Reduce);
  try {
    lower_schedule(overlap, LoweringOptions{9, true, ""});
    FAIL() << "overlapping writes were accepted";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("overlapping"), std::string::npos) << e.what();
  }

  Schedule single;
  single.n = 1;
  EXPECT_THROW(lower_schedule(single, LoweringOptions{8, true, ""}), ScheduleError);
}

TEST(Lowering, ReduceScatterPhaseBecomesOneCollective) {
  const Schedule s = testing::make_two_phase_straggler_schedule(4);
  const LoweredSchedule lowered = lower_schedule(s, LoweringOptions{120, true, "reduce_scatter"});
  ASSERT_EQ(lowered.collectives.size(), 1u);
  const CollectiveSpec& spec = lowered.collectives[0];
  EXPECT_EQ(spec.ranks, (std::vector<Rank>{0, 1, 2}));
  EXPECT_EQ(spec.chunk_offset, 0u);
  EXPECT_EQ(spec.block_elements, 40u);
  EXPECT_EQ(spec.input.offset, 0u);
  EXPECT_EQ(spec.input.count, 120u);
  EXPECT_EQ(lowered.num_rounds, s.num_rounds());
  for (Rank r = 0; r < 3; ++r) {
    const Step& first = lowered.programs[r].steps.at(0);
    EXPECT_EQ(first.kind, Step::Kind::ReduceScatter);
    EXPECT_EQ(first.round, 0u);
    // Phase 1 has n-2 = 2 rounds; rank g's straggler exchange is completion round g.
    EXPECT_EQ(lowered.programs[r].steps.at(1).round, 2u + r);
  }
  EXPECT_EQ(lowered.programs[3].steps.at(0).kind, Step::Kind::Group);
  const std::string listing = format_program(lowered, 1);
  EXPECT_EQ(listing.substr(0, listing.find('\n')), "round 0: reduce_scatter among [0,1,2] of [0, 120) -> [40, 80)");
}

TEST(Lowering, ReduceScatterReplacementIsChecked) {
  const Schedule s = testing::make_two_phase_straggler_schedule(4);
  EXPECT_THROW(lower_schedule(s, LoweringOptions{120, true, "phase_one"}), ConfigError);
  // 124 elements = 31 units in 3 chunks: 44, 40, 40 — ncclReduceScatter needs equal blocks.
  try {
    lower_schedule(s, LoweringOptions{124, true, "reduce_scatter"});
    FAIL() << "unequal blocks were accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unequal"), std::string::npos) << e.what();
  }
  // The completion phase is not a reduce-scatter.
  EXPECT_THROW(lower_schedule(s, LoweringOptions{120, true, "completion"}), ConfigError);
  // A reduce-scatter with nothing after it leaves an incomplete AllReduce.
  Schedule rs_only = s;
  rs_only.phases.pop_back();
  try {
    lower_schedule(rs_only, LoweringOptions{120, true, "reduce_scatter"});
    FAIL() << "an incomplete AllReduce was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("would end with chunk"), std::string::npos) << e.what();
  }
}

TEST(Lowering, AnEmptyReduceScatterPhaseNeedsNoCollective) {
  Schedule s = testing::make_two_phase_straggler_schedule(3);
  s.phases[0] = Phase("reduce_scatter");
  s.phases[0].begin_round();
  const LoweredSchedule lowered = lower_schedule(s, LoweringOptions{8, true, "reduce_scatter"});
  EXPECT_TRUE(lowered.collectives.empty());
  EXPECT_EQ(lowered.num_rounds, s.num_rounds());
}

TEST(Lowering, RingReduceScatterPhaseCanAlsoBeReplaced) {
  // Ring's AllGather reads only the chunk each rank owns, so NCCL's untouched inputs elsewhere
  // do not matter; the check must accept it.
  const Schedule ring = generate_schedule("ring", AlgorithmOptions{5, {}, 0});
  const LoweredSchedule lowered = lower_schedule(ring, LoweringOptions{200, true, "reduce_scatter"});
  ASSERT_EQ(lowered.collectives.size(), 1u);
  EXPECT_EQ(lowered.collectives[0].ranks.size(), 5u);
}

TEST(Lowering, OnlyAStragglerScheduleWithAReduceScatterPhaseHasAReadyReduceScatter) {
  // Decided from the generated schedule, never from the algorithm's name.
  EXPECT_TRUE(has_ready_reduce_scatter(testing::make_two_phase_straggler_schedule(4)));
  EXPECT_FALSE(has_ready_reduce_scatter(generate_schedule("ring", AlgorithmOptions{4, {}, 0})))
      << "ring's reduce_scatter phase involves every rank: no straggler";
  Schedule no_phase = testing::make_two_phase_straggler_schedule(4);
  no_phase.phases.erase(no_phase.phases.begin());
  EXPECT_FALSE(has_ready_reduce_scatter(no_phase)) << "a straggler schedule without the phase (direct)";
}

}  // namespace
}  // namespace collsim::cuda_validate
