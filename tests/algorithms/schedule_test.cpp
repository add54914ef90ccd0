#include "collsim/algorithms/schedule.hpp"

#include <gtest/gtest.h>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"

namespace collsim {
namespace {

TEST(Schedule, RoundsAreContiguousSlices) {
  Schedule s;
  s.n = 3;
  Phase& p = s.add_phase("x");
  p.begin_round();
  p.add(0, 1, 0, 1, Op::Reduce);
  p.add(1, 2, 0, 1, Op::Reduce);
  p.begin_round();
  p.begin_round();
  p.add(2, 0, 0, 1, Op::Copy);
  ASSERT_EQ(p.num_rounds(), 3u);
  EXPECT_EQ(p.round(0).size(), 2u);
  EXPECT_EQ(p.round(1).size(), 0u);
  ASSERT_EQ(p.round(2).size(), 1u);
  EXPECT_EQ(p.round(2)[0].src, 2u);
  EXPECT_EQ(s.num_transfers(), 3u);
  p.begin_round();
  p.trim_empty_rounds();
  EXPECT_EQ(p.num_rounds(), 3u);
}

TEST(Schedule, AddRejectsMissingRoundAndHugeChunkCounts) {
  Phase p("x");
  EXPECT_THROW(p.add(0, 1, 0, 1, Op::Copy), ScheduleError);
  p.begin_round();
  EXPECT_THROW(p.add(0, 1, 0, 0, Op::Copy), ScheduleError);
  EXPECT_THROW(p.add(0, 1, 0, 70000, Op::Copy), ScheduleError);
}

TEST(Schedule, RelabelSwapsRanksAndStraggler) {
  Schedule s;
  s.n = 3;
  s.straggler = 2;
  s.add_phase("x").begin_round();
  s.phases[0].add(0, 2, 0, 1, Op::Reduce);
  const std::vector<Rank> perm{2, 1, 0};
  s.relabel(perm);
  EXPECT_EQ(s.phases[0].round(0)[0].src, 2u);
  EXPECT_EQ(s.phases[0].round(0)[0].dst, 0u);
  EXPECT_EQ(s.straggler, 0);
  const std::vector<Rank> bad{0, 0, 1};
  EXPECT_THROW(s.relabel(bad), ScheduleError);
}

TEST(Schedule, ParticipantsOfAPhase) {
  Schedule s;
  s.n = 5;
  Phase& p = s.add_phase("x");
  p.begin_round();
  p.add(3, 1, 0, 1, Op::Copy);
  EXPECT_EQ(participants(p, s.n), (std::vector<Rank>{1, 3}));
}

TEST(Registry, UnknownAlgorithmAndBadN) {
  EXPECT_THROW(find_algorithm("rnig"), ConfigError);
  try {
    generate_schedule("rnig", AlgorithmOptions{4, {}, 0});
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("rnig"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("ring"), std::string::npos);
  }
  EXPECT_THROW(generate_schedule("ring", AlgorithmOptions{1, {}, 0}), ScheduleError);
  EXPECT_THROW(generate_schedule("ring", AlgorithmOptions{0, {}, 0}), ScheduleError);
  EXPECT_THROW(generate_schedule("ring", AlgorithmOptions{4, Rank{4}, 0}), ScheduleError);
}

}  // namespace
}  // namespace collsim
