#include "collsim/models/arrival.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "collsim/models/error.hpp"
#include "test_support.hpp"

namespace collsim {
namespace {

using test::expect_config_error;

ArrivalSpec stragglers(std::vector<StragglerSpec> list, double persistence = 1.0,
                       PersistenceMode mode = PersistenceMode::Markov) {
  ArrivalSpec spec;
  spec.model = ArrivalModel::Stragglers;
  spec.stragglers = std::move(list);
  spec.persistence = persistence;
  spec.persistence_mode = mode;
  return spec;
}

ArrivalSpec one_straggler(std::uint32_t rank, DelayDistribution delay, double persistence = 1.0,
                          PersistenceMode mode = PersistenceMode::Markov) {
  return stragglers({{rank, std::move(delay)}}, persistence, mode);
}

TEST(Arrival, NoneIsEveryoneAtZero) {
  const auto a = make_arrivals(ArrivalSpec{}, 4, 0, 1);
  EXPECT_EQ(a.arrival_s, (std::vector<double>{0, 0, 0, 0}));
  EXPECT_TRUE(a.stragglers.empty());
  EXPECT_TRUE(a.expected_stragglers.empty());
  EXPECT_FALSE(a.straggler_moved());
}

TEST(Arrival, ExplicitListIsShiftedToStartAtZero) {
  ArrivalSpec spec;
  spec.model = ArrivalModel::Explicit;
  spec.arrival_s = {1e-3, 1e-3, 3e-3, 1e-3};
  const auto a = make_arrivals(spec, 4, 0, 1);
  EXPECT_EQ(a.arrival_s, (std::vector<double>{0, 0, 2e-3, 0}));
  EXPECT_EQ(a.stragglers, (std::vector<std::uint32_t>{2}));
  EXPECT_EQ(a.expected_stragglers, (std::vector<std::uint32_t>{2}));
  EXPECT_DOUBLE_EQ(a.max_arrival_s(), 2e-3);
}

TEST(Arrival, FixedStragglersArriveExactlyLate) {
  const auto spec = stragglers({{3, DelayDistribution::constant(5e-3)}, {7, DelayDistribution::constant(2e-3)}});
  const auto a = make_arrivals(spec, 8, 0, 99);
  EXPECT_EQ(a.arrival_s, (std::vector<double>{0, 0, 0, 5e-3, 0, 0, 0, 2e-3}));
  EXPECT_EQ(a.stragglers, (std::vector<std::uint32_t>{3, 7}));
  EXPECT_EQ(a.expected_stragglers, (std::vector<std::uint32_t>{3, 7}));
  EXPECT_EQ(spec.expected_stragglers(), (std::vector<std::uint32_t>{3, 7}));
  EXPECT_NE(spec.describe().find("rank 3: constant(5.000 ms)"), std::string::npos) << spec.describe();
}

// Of several stragglers, schedules are built for the one with the largest median delay (the
// latest most of the time), whatever the order they are listed in; the first listed on a tie.
TEST(Arrival, SchedulesAreBuiltForTheLargestMedianDelay) {
  const auto c = [](double s) { return DelayDistribution::constant(s); };
  auto spec = stragglers({{3, c(2e-3)}, {7, c(5e-3)}, {1, c(1e-3)}});
  EXPECT_EQ(spec.schedule_slot(), 1u);
  EXPECT_EQ(spec.schedule_straggler(spec.expected_stragglers()), std::optional<std::uint32_t>(7));
  EXPECT_EQ(spec.schedule_straggler(make_arrivals(spec, 8, 0, 1).expected_stragglers), std::optional<std::uint32_t>(7));
  EXPECT_EQ(stragglers({{3, c(5e-3)}, {7, c(5e-3)}}).schedule_slot(), 0u);
  // By the median, not the mean: this lognormal's median is 1 ms (its mean 4 ms), and a Pareto
  // with an infinite mean has a median of about 2.2 ms: a constant 3 ms is later most of the time.
  EXPECT_EQ(stragglers({{3, c(3e-3)}, {7, DelayDistribution::lognormal_from_median_mean(1e-3, 4e-3)}}).schedule_slot(), 0u);
  EXPECT_EQ(stragglers({{3, c(3e-3)}, {7, DelayDistribution::pareto(1e-3, 0.9)}}).schedule_slot(), 0u);
  EXPECT_EQ(stragglers({{3, c(1e-3)}, {7, DelayDistribution::lognormal_from_median_mean(2e-3, 3e-3)}}).schedule_slot(), 1u);
  EXPECT_EQ(spec.schedule_straggler({}), std::nullopt);
  ArrivalSpec explicit_spec;
  explicit_spec.model = ArrivalModel::Explicit;
  explicit_spec.arrival_s = {0, 3e-3, 1e-3, 0};
  EXPECT_EQ(explicit_spec.schedule_slot(), 0u);
  EXPECT_EQ(explicit_spec.schedule_straggler(explicit_spec.expected_stragglers()), std::optional<std::uint32_t>(1));
}

TEST(Arrival, DrawnStragglerDelayFollowsItsDistribution) {
  const auto delay = DelayDistribution::lognormal_from_median_mean(6.97e-3, 9.50e-3);
  ArrivalProcess process(one_straggler(7, delay), 8, 2024);
  constexpr int kIterations = 20000;
  double sum = 0.0;
  for (int i = 0; i < kIterations; ++i) {
    const auto a = process.at(static_cast<std::uint64_t>(i));
    sum += a.arrival_s[7];
    EXPECT_EQ(a.arrival_s[0], 0.0);
  }
  EXPECT_NEAR(sum / kIterations, 9.50e-3, 5.0 * std::sqrt(delay.variance() / kIterations));
}

TEST(Arrival, KDrawnStragglersAreIndependent) {
  const auto delay = DelayDistribution::exponential(1e-3);
  ArrivalProcess process(stragglers({{1, delay}, {2, delay}}), 4, 5);
  int first_later = 0;
  for (int i = 0; i < 4000; ++i) {
    const auto a = process.at(static_cast<std::uint64_t>(i));
    EXPECT_NE(a.arrival_s[1], a.arrival_s[2]);
    first_later += a.arrival_s[1] > a.arrival_s[2];
  }
  EXPECT_NEAR(first_later, 2000, 200);
}

TEST(Arrival, JitterIsAddedToEveryoneAndLeavesStragglerDelaysAlone) {
  const auto delay = DelayDistribution::lognormal_from_median_mean(6.97e-3, 9.50e-3);
  auto with = one_straggler(2, delay);
  with.jitter = DelayDistribution::uniform(0.0, 20e-6);
  const auto without = one_straggler(2, delay);
  for (std::uint64_t it = 0; it < 50; ++it) {
    const auto a = make_arrivals(with, 6, it, 77);
    const auto b = make_arrivals(without, 6, it, 77);
    EXPECT_EQ(*std::min_element(a.arrival_s.begin(), a.arrival_s.end()), 0.0);
    // Jitter is at most 20 us on either side of the straggler's own delay.
    EXPECT_NEAR(a.arrival_s[2], b.arrival_s[2], 20e-6);
    int jittered = 0;
    for (std::uint32_t r = 0; r < 6; ++r) {
      if (r == 2) continue;
      EXPECT_LE(a.arrival_s[r], 20e-6);
      jittered += a.arrival_s[r] > 0.0;
    }
    EXPECT_GE(jittered, 4);  // exactly one rank (the earliest) sits at 0
  }
}

TEST(Arrival, JitterAloneWithModelNone) {
  ArrivalSpec spec;
  spec.jitter = DelayDistribution::exponential(1e-6);
  const auto a = make_arrivals(spec, 16, 3, 8);
  EXPECT_EQ(std::count(a.arrival_s.begin(), a.arrival_s.end(), 0.0), 1);
  EXPECT_NE(spec.describe().find("jitter exponential"), std::string::npos);
}

TEST(Arrival, ExactValuesForAFixedSeed) {
  // Golden values: catch any change of sub-stream derivation or sampling algorithm.
  auto spec = one_straggler(5, DelayDistribution::lognormal_from_median_mean(6.97e-3, 9.50e-3), 0.5);
  spec.jitter = DelayDistribution::uniform(0.0, 20e-6);
  ArrivalProcess process(spec, 8, 42);
  // Iteration 3 moves the straggler to rank 2, iteration 4 on to rank 4 (Markov, p = 0.5).
  const std::vector<std::uint32_t> expected_rank{5, 5, 5, 2, 4, 4};
  const std::vector<std::uint32_t> expected_expected{5, 5, 5, 5, 2, 4};
  const std::vector<double> expected_latest{0.0048786466801061653, 0.0029478143650815119, 0.012918451324751818,
                                            0.0068766349125402157, 0.0084264744244554254, 0.014487023742496457};
  const std::vector<double> expected_rank0{1.2899321520625775e-05, 5.5022628381006359e-06, 1.5398241421262563e-05,
                                           3.4223223133573295e-07, 2.9617551598166904e-06, 4.9380646176671097e-06};
  for (std::uint64_t it = 0; it < 6; ++it) {
    const auto a = process.at(it);
    EXPECT_EQ(a.stragglers, std::vector<std::uint32_t>{expected_rank[it]}) << "iteration " << it;
    EXPECT_EQ(a.expected_stragglers, std::vector<std::uint32_t>{expected_expected[it]}) << "iteration " << it;
    EXPECT_NEAR(a.max_arrival_s(), expected_latest[it], 1e-12 * expected_latest[it]) << "iteration " << it;
    EXPECT_NEAR(a.arrival_s[0], expected_rank0[it], 1e-9 * expected_rank0[it]) << "iteration " << it;
  }
}

TEST(Arrival, SameSeedSameArrivalsInAnyOrder) {
  auto spec = one_straggler(1, DelayDistribution::pareto(1e-3, 2.5), 0.7);
  spec.jitter = DelayDistribution::truncated_normal(5e-6, 2e-6);
  ArrivalProcess forward(spec, 16, 123);
  std::vector<Arrivals> first;
  for (std::uint64_t it = 0; it < 30; ++it) first.push_back(forward.at(it));
  ArrivalProcess backward(spec, 16, 123);
  for (std::uint64_t it = 30; it-- > 0;) {
    const auto a = backward.at(it);
    EXPECT_EQ(a.arrival_s, first[it].arrival_s);
    EXPECT_EQ(a.stragglers, first[it].stragglers);
    EXPECT_EQ(a.expected_stragglers, first[it].expected_stragglers);
  }
  const auto single = make_arrivals(spec, 16, 17, 123);
  EXPECT_EQ(single.arrival_s, first[17].arrival_s);
  EXPECT_EQ(single.iteration, 17u);
}

TEST(Arrival, DifferentSeedsOrIterationsDiffer) {
  const auto spec = one_straggler(1, DelayDistribution::exponential(1e-3));
  EXPECT_NE(make_arrivals(spec, 4, 0, 1).arrival_s, make_arrivals(spec, 4, 0, 2).arrival_s);
  EXPECT_NE(make_arrivals(spec, 4, 0, 1).arrival_s, make_arrivals(spec, 4, 1, 1).arrival_s);
}

TEST(Persistence, MarkovStaysWithProbabilityP) {
  constexpr double kP = 0.9;
  constexpr std::uint32_t kN = 8;
  constexpr int kIterations = 20000;
  ArrivalProcess process(one_straggler(3, DelayDistribution::constant(5e-3), kP), kN, 31337);
  std::vector<int> destination(kN, 0);
  int stays = 0, moves = 0;
  std::uint32_t previous = 3;
  for (int i = 0; i < kIterations; ++i) {
    const auto a = process.at(static_cast<std::uint64_t>(i));
    ASSERT_EQ(a.stragglers.size(), 1u);
    const std::uint32_t s = a.stragglers[0];
    EXPECT_EQ(a.expected_stragglers[0], previous);  // schedule built for the last observed one
    EXPECT_EQ(a.arrival_s[s], 5e-3);
    if (s == previous) {
      ++stays;
      EXPECT_FALSE(a.straggler_moved());
    } else {
      ++moves;
      ++destination[s];
      EXPECT_TRUE(a.straggler_moved());
    }
    previous = s;
  }
  // Binomial(20000, 0.9): standard deviation 42; allow ~5 of them.
  EXPECT_NEAR(stays, kP * kIterations, 220);
  // Moves land uniformly on the other ranks: each of the 8 ranks receives ~1/8 of them overall.
  for (std::uint32_t r = 0; r < kN; ++r) EXPECT_NEAR(destination[r], moves / 8.0, 120) << "rank " << r;
}

TEST(Persistence, AnchoredIsTheConfiguredRankWithProbabilityP) {
  constexpr double kP = 0.77;
  constexpr int kIterations = 20000;
  ArrivalProcess process(one_straggler(0, DelayDistribution::constant(1e-3), kP, PersistenceMode::Anchored), 4, 5);
  int at_configured = 0;
  for (int i = 0; i < kIterations; ++i) {
    const auto a = process.at(static_cast<std::uint64_t>(i));
    EXPECT_EQ(a.expected_stragglers, (std::vector<std::uint32_t>{0}));
    at_configured += a.stragglers[0] == 0;
  }
  EXPECT_NEAR(at_configured, kP * kIterations, 300);  // sd 60
}

TEST(Persistence, ExtremesAndSeveralStragglers) {
  ArrivalProcess always(one_straggler(2, DelayDistribution::constant(1e-3), 1.0), 4, 1);
  ArrivalProcess never(one_straggler(2, DelayDistribution::constant(1e-3), 0.0), 4, 1);
  std::uint32_t previous = 2;
  for (std::uint64_t it = 0; it < 200; ++it) {
    EXPECT_EQ(always.stragglers_at(it), (std::vector<std::uint32_t>{2}));
    const auto moved = never.stragglers_at(it);
    EXPECT_NE(moved[0], previous);
    previous = moved[0];
  }
  // Two stragglers moving among three ranks always stay distinct.
  ArrivalProcess pair(stragglers({{0, DelayDistribution::constant(1e-3)}, {1, DelayDistribution::constant(2e-3)}}, 0.3),
                      3, 9);
  for (std::uint64_t it = 0; it < 500; ++it) {
    const auto a = pair.at(it);
    EXPECT_NE(a.stragglers[0], a.stragglers[1]);
    EXPECT_EQ(a.arrival_s[a.stragglers[0]], 1e-3);  // the slot keeps its delay when it moves
    EXPECT_EQ(a.arrival_s[a.stragglers[1]], 2e-3);
  }
}

TEST(ArrivalValidation, BadSpecsNameKeyAndValue) {
  const auto five = DelayDistribution::constant(5e-3);
  expect_config_error([&] { make_arrivals(one_straggler(8, five), 8, 0, 1); },
                      {"arrival.stragglers[0].rank", "8", "n = 8"});
  expect_config_error([&] { make_arrivals(stragglers({{1, five}, {1, five}}), 8, 0, 1); },
                      {"arrival.stragglers[1].rank", "1", "twice"});
  expect_config_error([&] { one_straggler(1, five, 1.5).validate(); }, {"arrival.persistence", "1.5"});
  expect_config_error([&] { one_straggler(1, five, -0.1).validate(); }, {"arrival.persistence", "-0.1"});
  expect_config_error([&] { make_arrivals(one_straggler(0, five, 0.5), 1, 0, 1); },
                      {"arrival.persistence", "0.5", "n = 1"});
  expect_config_error([&] { make_arrivals(one_straggler(0, five), 0, 0, 1); }, {"arrival", "at least 1"});
  expect_config_error([&] { stragglers({}).validate("cfg.arrival"); }, {"cfg.arrival.stragglers", "at least one"});

  ArrivalSpec explicit_spec;
  explicit_spec.model = ArrivalModel::Explicit;
  explicit_spec.arrival_s = {0.0, 1e-3, 0.0};
  expect_config_error([&] { make_arrivals(explicit_spec, 4, 0, 1); }, {"arrival.arrival", "3 entries", "n = 4"});
  explicit_spec.arrival_s = {0.0, -1e-3, 0.0};
  expect_config_error([&] { explicit_spec.validate(); }, {"arrival.arrival[1]", "-0.001"});
  explicit_spec.arrival_s = {};
  expect_config_error([&] { explicit_spec.validate(); }, {"arrival.arrival", "empty"});
  explicit_spec.arrival_s = {0.0, 1e-3};
  explicit_spec.persistence = 0.5;
  expect_config_error([&] { explicit_spec.validate(); }, {"arrival.persistence", "0.5", "explicit"});
  explicit_spec.persistence = 1.0;
  explicit_spec.stragglers = {{0, five}};
  expect_config_error([&] { explicit_spec.validate(); }, {"arrival.stragglers", "explicit"});
}

// The inputs of simulate --spread: each rank moved by at most the nudge, the first at 0 again,
// the same draws for the same seed and others for another.
TEST(Arrivals, NudgedArrivalsMoveEachRankByAtMostTheNudge) {
  const std::vector<double> arrival_s{0.0, 30e-3, 1e-6, 0.0};
  const std::vector<double> a = nudged_arrivals(arrival_s, 7, 1e-12);
  ASSERT_EQ(a.size(), arrival_s.size());
  EXPECT_EQ(*std::min_element(a.begin(), a.end()), 0.0);
  bool moved = false;
  for (std::size_t r = 0; r < a.size(); ++r) {
    EXPECT_LE(std::abs(a[r] - arrival_s[r]), 1e-12) << r;
    moved = moved || a[r] != arrival_s[r];
  }
  EXPECT_TRUE(moved);
  EXPECT_NE(a[0], a[3]);  // each rank its own draw (one shared draw would be shifted away)
  EXPECT_EQ(nudged_arrivals(arrival_s, 7, 1e-12), a);
  EXPECT_NE(nudged_arrivals(arrival_s, 8, 1e-12), a);
  EXPECT_EQ(nudged_arrivals(arrival_s, 7, 0.0), arrival_s);
  EXPECT_TRUE(nudged_arrivals({}, 7, 1e-12).empty());
}

}  // namespace
}  // namespace collsim
