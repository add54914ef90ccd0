// The enqueue plan that the GPU runner translates call by call, checked and executed on the CPU.
#include <gtest/gtest.h>

#include "collsim/cuda_validate/execution_plan.hpp"
#include "collsim/cuda_validate/host_backend.hpp"
#include "cuda_test_support.hpp"

namespace collsim::cuda_validate {
namespace {

Schedule stragglar_or_skip(Rank n, Rank straggler, std::string& why) {
  const auto schedule = testing::try_generate("stragglar", n, straggler, why);
  return schedule ? *schedule : Schedule{};
}

TEST(ExecutionPlan, StragglerZeroReduceScatterRunsOnTheSubCommunicatorSevenOneToSix) {
  std::string why;
  const Schedule s = stragglar_or_skip(8, 0, why);
  if (s.n == 0) GTEST_SKIP() << why;
  // Not a multiple of 4 * 7 elements on purpose: collsim-cuda rounds, the plan must not care.
  const std::size_t count = 4 * 7 * 37;
  const LoweredSchedule lowered = lower_schedule(s, LoweringOptions{count, true, "reduce_scatter"});
  const ExecutionPlan plan = build_execution_plan(lowered);
  ASSERT_FALSE(plan.groups.empty());
  const PlanGroup& first = plan.groups.front();
  ASSERT_EQ(first.calls.size(), 7u);
  const std::vector<Rank> expected{7, 1, 2, 3, 4, 5, 6};
  for (std::uint32_t i = 0; i < 7; ++i) {
    const NcclCall& call = first.calls[i];
    EXPECT_EQ(call.kind, NcclCall::Kind::ReduceScatter);
    EXPECT_EQ(call.rank, expected[i]) << "comm rank " << i;
    EXPECT_EQ(call.comm_rank, i);
    EXPECT_EQ(call.data.range.offset, call.input.offset + i * lowered.collectives[0].block_elements);
  }
  EXPECT_EQ(plan.collectives[0].ranks, expected);
  EXPECT_TRUE(first.after.empty());
  for (std::uint64_t seed : {0u, 3u, 11u}) {
    auto buffers = make_input_buffers(8, count);
    const HostRunStats stats = execute_plan_on_host(plan, buffers, HostRunOptions{seed});
    EXPECT_EQ(stats.collectives, 1u);
    const ValidationResult v = validate_allreduce(buffers);
    EXPECT_TRUE(v.ok()) << "seed " << seed << ": " << v.first_mismatch;
  }
}

TEST(ExecutionPlan, OneGroupPerRoundOverAllGpusThenItsApplyOperations) {
  const LoweredSchedule lowered =
      lower_schedule(generate_schedule("ring", AlgorithmOptions{2, {}, 0}), LoweringOptions{8, true, ""});
  EXPECT_EQ(format_plan(build_execution_plan(lowered)),
            "group 0 (round 0):\n"
            "  gpu 0 send to 1 from buffer [4, 8)\n"
            "  gpu 0 recv from 1 into scratch [0, 4)\n"
            "  gpu 1 recv from 0 into scratch [0, 4)\n"
            "  gpu 1 send to 0 from buffer [0, 4)\n"
            "  then gpu 0 reduce scratch 0 into buffer [0, 4)\n"
            "  then gpu 1 reduce scratch 0 into buffer [4, 8)\n"
            "group 1 (round 1):\n"
            "  gpu 0 send to 1 from buffer [0, 4)\n"
            "  gpu 0 recv from 1 into buffer [4, 8)\n"
            "  gpu 1 recv from 0 into buffer [0, 4)\n"
            "  gpu 1 send to 0 from buffer [4, 8)\n");
}

// Every NCCL call and stream operation starts on a 16-byte boundary whenever the buffer size is
// a whole number of 16-byte units, for every algorithm, n and phase-1 mode: no schedule pays
// narrow loads the others do not.
TEST(ExecutionPlan, EveryChunkOfEveryPlanIsSixteenByteAligned) {
  std::size_t checked = 0;
  for (const auto& info : all_algorithms()) {
    for (Rank n = 2; n <= 8; ++n) {
      std::string why;
      const auto schedule = testing::try_generate(std::string(info.name), n, std::nullopt, why);
      if (!schedule) continue;
      for (std::size_t count : {std::size_t{4} * 1031, std::size_t{262'144}, std::size_t{4} * 7 * 9}) {
        std::vector<std::string> modes{""};
        if (has_ready_reduce_scatter(*schedule) && count % (kChunkAlignElements * schedule->num_chunks) == 0) {
          modes.emplace_back(kReadyReduceScatterPhase);
        }
        for (const std::string& mode : modes) {
          const ExecutionPlan plan = build_execution_plan(lower_schedule(*schedule, LoweringOptions{count, true, mode}));
          for (const PlanGroup& group : plan.groups) {
            for (const NcclCall& call : group.calls) {
              ASSERT_EQ(call.data.range.offset % kChunkAlignElements, 0u)
                  << info.name << " n=" << n << " count=" << count << " mode='" << mode << "'";
              ASSERT_EQ(call.input.offset % kChunkAlignElements, 0u) << info.name;
              ++checked;
            }
            for (const StreamOp& op : group.after) {
              ASSERT_EQ(op.range.offset % kChunkAlignElements, 0u) << info.name << " n=" << n;
              ASSERT_EQ(op.scratch_offset % kChunkAlignElements, 0u) << info.name << " n=" << n;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0u);
}

TEST(ExecutionPlan, HostBackendCatchesAPlanThatIsNotWhatNcclWouldRun) {
  const LoweredSchedule lowered =
      lower_schedule(testing::make_two_phase_straggler_schedule(4), LoweringOptions{48, true, "reduce_scatter"});
  const ExecutionPlan good = build_execution_plan(lowered);
  auto buffers = make_input_buffers(4, 48);
  execute_plan_on_host(good, buffers);
  ASSERT_TRUE(validate_allreduce(buffers).ok());

  // A ReduceScatter that is not in place (output block of the wrong comm rank).
  ExecutionPlan shifted = good;
  ASSERT_EQ(shifted.groups[0].calls[0].kind, NcclCall::Kind::ReduceScatter);
  std::swap(shifted.groups[0].calls[0].data, shifted.groups[0].calls[1].data);
  auto b1 = make_input_buffers(4, 48);
  EXPECT_THROW(execute_plan_on_host(shifted, b1), ScheduleError);

  // A GPU that leaves one group out waits forever for it: reported as a deadlock, not a hang.
  ExecutionPlan missing = good;
  missing.groups[0].calls.pop_back();
  auto b2 = make_input_buffers(4, 48);
  try {
    execute_plan_on_host(missing, b2);
    FAIL() << "a ReduceScatter without all its members ran";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("reduce_scatter (2 of 3 participants arrived)"), std::string::npos)
        << e.what();
  }

  // The apply operations of a round enqueued before its group read scratch too early.
  ExecutionPlan early = good;
  std::size_t with_after = 0;
  while (with_after < early.groups.size() && early.groups[with_after].after.empty()) ++with_after;
  ASSERT_LT(with_after, early.groups.size());
  ASSERT_GT(with_after, 0u);
  std::swap(early.groups[with_after - 1].after, early.groups[with_after].after);
  auto b3 = make_input_buffers(4, 48);
  execute_plan_on_host(early, b3);
  EXPECT_FALSE(validate_allreduce(b3).ok());
}

TEST(ExecutionPlan, RejectsProgramsOutOfRoundOrder) {
  LoweredSchedule lowered =
      lower_schedule(generate_schedule("ring", AlgorithmOptions{3, {}, 0}), LoweringOptions{12, true, ""});
  std::swap(lowered.programs[1].steps[0], lowered.programs[1].steps[1]);
  EXPECT_THROW(build_execution_plan(lowered), ScheduleError);
}

}  // namespace
}  // namespace collsim::cuda_validate
