#include <gtest/gtest.h>
#include <fmt/format.h>

#include <iostream>

#include "collsim/cuda_validate/host_backend.hpp"
#include "cuda_test_support.hpp"

namespace collsim::cuda_validate {
namespace {

// Empty if equal, else where the first difference is.
std::string first_difference(const std::vector<std::vector<float>>& got,
                             const std::vector<std::vector<float>>& expected) {
  if (got.size() != expected.size()) return fmt::format("{} buffers vs {}", got.size(), expected.size());
  for (std::size_t r = 0; r < got.size(); ++r) {
    if (got[r].size() != expected[r].size()) {
      return fmt::format("rank {}: size {} vs {}", r, got[r].size(), expected[r].size());
    }
    for (std::size_t e = 0; e < got[r].size(); ++e) {
      if (got[r][e] != expected[r][e]) {
        return fmt::format("rank {} element {}: host {} vs reference {}", r, e, got[r][e], expected[r][e]);
      }
    }
  }
  return {};
}

std::vector<std::size_t> test_counts(std::uint32_t num_chunks) {
  std::vector<std::size_t> counts{1, num_chunks, 5 * static_cast<std::size_t>(num_chunks) + 3, 1031};
  if (num_chunks > 2) counts.push_back(num_chunks - 1);
  return counts;
}

// Runs `schedule` lowered for `count` elements under several lowering options and poll orders and
// checks the host result equals the reference executor's, element for element.
void expect_host_matches_reference(const Schedule& schedule, std::size_t count, const std::string& rs_phase = "") {
  const auto expected = testing::reference_buffers(schedule, count);
  for (bool in_place : {true, false}) {
    const LoweredSchedule lowered = lower_schedule(schedule, LoweringOptions{count, in_place, rs_phase});
    for (std::uint64_t seed : {0u, 1u, 7u}) {
      auto buffers = make_input_buffers(schedule.n, count);
      const HostRunStats stats = execute_on_host(lowered, buffers, HostRunOptions{seed});
      const std::string where = fmt::format("{} n={} count={} in_place={} seed={} rs='{}'", schedule.algorithm,
                                            schedule.n, count, in_place, seed, rs_phase);
      ASSERT_EQ(stats.matched_pairs, lowered.num_sends()) << where;
      ASSERT_EQ(stats.collectives, lowered.collectives.size()) << where;
      if (rs_phase.empty()) {
        // Without replacement the host run must equal the reference run exactly, intermediate
        // partial sums included, whatever the schedule computes.
        ASSERT_EQ(first_difference(buffers, expected), "") << where;
      }
      const ValidationResult v = validate_allreduce(buffers);
      ASSERT_TRUE(v.ok()) << where << ": " << v.first_mismatch;
    }
  }
}

class EveryAlgorithm : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryAlgorithm, HostBackendMatchesReferenceExecutor) {
  const std::string name = GetParam();
  const AlgorithmInfo& info = find_algorithm(name);
  std::vector<std::string> skipped;
  int ran = 0;
  for (Rank n = 2; n <= 8; ++n) {
    std::vector<std::optional<Rank>> stragglers{std::nullopt};
    if (info.straggler_aware) stragglers.push_back(Rank{0});
    for (const auto& straggler : stragglers) {
      std::string why;
      const auto schedule = testing::try_generate(name, n, straggler, why);
      if (!schedule) {
        skipped.push_back(fmt::format("n={}: {}", n, why));
        continue;
      }
      ASSERT_TRUE(execute_reference(*schedule, 2).correct) << name << " n=" << n;
      for (std::size_t count : test_counts(schedule->num_chunks)) {
        expect_host_matches_reference(*schedule, count);
        if (HasFatalFailure()) return;
      }
      // collsim-cuda --phase1 nccl: StragglAR's phase 1 as one ncclReduceScatter.
      if (name == "stragglar") {
        for (std::size_t blocks : {1u, 3u, 17u}) {
          expect_host_matches_reference(*schedule, blocks * kChunkAlignElements * schedule->num_chunks,
                                        "reduce_scatter");
          if (HasFatalFailure()) return;
        }
      }
      ++ran;
    }
  }
  if (ran == 0) {
    GTEST_SKIP() << name << " has no schedule yet (" << (skipped.empty() ? "" : skipped.front()) << ")";
  }
  if (!skipped.empty()) {
    std::cout << "[   NOTE   ] " << name << ": skipped " << skipped.size() << " case(s), first: " << skipped.front()
              << "\n";
  }
}

std::vector<std::string> algorithm_names_list() {
  std::vector<std::string> names;
  for (const auto& a : all_algorithms()) names.emplace_back(a.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryAlgorithm, ::testing::ValuesIn(algorithm_names_list()),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

TEST(HostBackend, TwoPhaseScheduleWithAndWithoutNcclReduceScatter) {
  for (Rank n = 3; n <= 8; ++n) {
    const Schedule s = testing::make_two_phase_straggler_schedule(n);
    for (std::size_t count : test_counts(s.num_chunks)) {
      expect_host_matches_reference(s, count);
      if (HasFatalFailure()) return;
    }
    for (std::size_t blocks : {1u, 4u, 9u}) {
      expect_host_matches_reference(s, blocks * kChunkAlignElements * s.num_chunks, "reduce_scatter");
      if (HasFatalFailure()) return;
    }
  }
}

// A lowered program written by hand, to feed the backend shapes lower_schedule never produces.
LoweredSchedule hand_program(Rank n, std::size_t count) {
  LoweredSchedule l;
  l.algorithm = "hand";
  l.n = n;
  l.count = count;
  l.programs.resize(n);
  return l;
}

Step group(std::uint32_t round, std::vector<PeerOp> ops, std::vector<ApplyOp> apply = {}) {
  Step s;
  s.round = round;
  s.peer_ops = std::move(ops);
  s.apply_ops = std::move(apply);
  return s;
}

TEST(HostBackend, ReportsDeadlock) {
  LoweredSchedule l = hand_program(2, 4);
  l.programs[0].steps.push_back(group(0, {PeerOp{PeerOp::Kind::Recv, 1, {0, 4}, kNoScratch}}));
  l.programs[1].steps.push_back(group(0, {PeerOp{PeerOp::Kind::Recv, 0, {0, 4}, kNoScratch}}));
  auto buffers = make_input_buffers(2, 4);
  try {
    execute_on_host(l, buffers);
    FAIL() << "deadlock not detected";
  } catch (const ScheduleError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("deadlock"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 1 in round 0 waits for recv from 0 [0, 4)"), std::string::npos) << what;
  }
}

TEST(HostBackend, ReportsSizeMismatch) {
  LoweredSchedule l = hand_program(2, 4);
  l.programs[0].steps.push_back(group(0, {PeerOp{PeerOp::Kind::Send, 1, {0, 4}, kNoScratch}}));
  l.programs[1].steps.push_back(group(0, {PeerOp{PeerOp::Kind::Recv, 0, {0, 3}, kNoScratch}}));
  auto buffers = make_input_buffers(2, 4);
  EXPECT_THROW(execute_on_host(l, buffers), ScheduleError);
}

TEST(HostBackend, RejectsBuffersOfTheWrongShape) {
  const LoweredSchedule l =
      lower_schedule(generate_schedule("ring", AlgorithmOptions{3, {}, 0}), LoweringOptions{9, true, ""});
  auto too_few = make_input_buffers(2, 9);
  EXPECT_THROW(execute_on_host(l, too_few), ConfigError);
  auto too_short = make_input_buffers(3, 8);
  EXPECT_THROW(execute_on_host(l, too_short), ConfigError);
}

// The backend must be faithful enough to expose a lowering bug: a swap received in place
// overwrites data the peer has not read yet, and the host run shows it.
TEST(HostBackend, ExposesAnUnsafeInPlaceReceive) {
  LoweredSchedule l = hand_program(2, 4);
  for (Rank r = 0; r < 2; ++r) {
    l.programs[r].steps.push_back(group(0, {PeerOp{PeerOp::Kind::Send, 1 - r, {0, 4}, kNoScratch},
                                            PeerOp{PeerOp::Kind::Recv, 1 - r, {0, 4}, kNoScratch}}));
  }
  auto buffers = make_input_buffers(2, 4);
  const auto inputs = buffers;
  execute_on_host(l, buffers);
  EXPECT_FALSE(buffers[0] == inputs[1] && buffers[1] == inputs[0]) << "an in-place swap cannot deliver both inputs";

  // The same swap as lowered (through scratch) is correct.
  Schedule swap;
  swap.algorithm = "swap";
  swap.n = 2;
  Phase& p = swap.add_phase("swap");
  p.begin_round();
  p.add(0, 1, 0, 1, Op::Copy);
  p.add(1, 0, 0, 1, Op::Copy);
  auto lowered_buffers = make_input_buffers(2, 4);
  execute_on_host(lower_schedule(swap, LoweringOptions{4, true, ""}), lowered_buffers);
  EXPECT_EQ(lowered_buffers[0], inputs[1]);
  EXPECT_EQ(lowered_buffers[1], inputs[0]);
}

TEST(HostBackend, ValidationFindsAWrongElement) {
  const LoweredSchedule l =
      lower_schedule(generate_schedule("ring", AlgorithmOptions{4, {}, 0}), LoweringOptions{10, true, ""});
  auto buffers = make_input_buffers(4, 10);
  execute_on_host(l, buffers);
  ASSERT_TRUE(validate_allreduce(buffers).ok());
  buffers[2][7] += 1.0f;
  const ValidationResult v = validate_allreduce(buffers);
  EXPECT_EQ(v.mismatches, 1u);
  EXPECT_NE(v.first_mismatch.find("rank 2 element 7"), std::string::npos) << v.first_mismatch;
  buffers[1].pop_back();
  EXPECT_THROW(validate_allreduce(buffers), ConfigError);
}

}  // namespace
}  // namespace collsim::cuda_validate
