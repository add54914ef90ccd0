// stragglar_online on the IR: the schedule for k late ranks is a correct AllReduce for every
// k = 1..n-1 (verifier and reference executor), k = 1 is StragglAR's schedule, and so is every
// relabelling the engines may pick at run time.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "collsim/algorithms/reference_executor.hpp"
#include "collsim/algorithms/registry.hpp"
#include "collsim/algorithms/verifier.hpp"
#include "collsim/models/error.hpp"

namespace collsim {
namespace {

Schedule online(Rank n, std::uint32_t k) {
  AlgorithmOptions options;
  options.n = n;
  options.late_ranks = k;
  return generate_schedule("stragglar_online", options);
}

std::string first_problem(const Schedule& s) {
  const auto d = verify_schedule(s);
  return d.empty() ? "" : format_diagnostic(s, d.front());
}

TEST(StragglarOnline, RowIsStragglerAwareAndRelabelledAtRunTime) {
  const AlgorithmInfo& info = find_algorithm("stragglar_online");
  EXPECT_TRUE(info.straggler_aware);
  EXPECT_TRUE(info.relabel_at_run_time);
  EXPECT_FALSE(info.schedule_depends_on_straggler());
  EXPECT_TRUE(find_algorithm("stragglar").schedule_depends_on_straggler());
  EXPECT_TRUE(info.has_closed_form());
}

TEST(StragglarOnline, OneLateRankIsStragglarsSchedule) {
  for (Rank n : {2u, 3u, 4u, 7u, 8u, 12u, 32u}) {
    const Schedule a = online(n, 1);
    const Schedule b = generate_schedule("stragglar", AlgorithmOptions{n, {}, 0});
    EXPECT_EQ(a.late_ranks, 1u);
    EXPECT_EQ(b.late_ranks, 0u);
    ASSERT_EQ(a.phases.size(), b.phases.size()) << n;
    EXPECT_EQ(a.num_chunks, b.num_chunks);
    for (std::size_t p = 0; p < a.phases.size(); ++p) {
      ASSERT_EQ(a.phases[p].num_rounds(), b.phases[p].num_rounds()) << n;
      const auto x = a.phases[p].transfers();
      const auto y = b.phases[p].transfers();
      ASSERT_EQ(x.size(), y.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        EXPECT_TRUE(x[i].src == y[i].src && x[i].dst == y[i].dst && x[i].chunk_begin == y[i].chunk_begin &&
                    x[i].op == y[i].op)
            << "n=" << n << " phase " << p << " transfer " << i;
      }
    }
  }
}

// The schedule is built for the late ranks, not for AlgorithmOptions::straggler: the engines
// relabel it when they know who is late.
TEST(StragglarOnline, IgnoresTheExpectedStraggler) {
  const Schedule s = generate_schedule("stragglar_online", AlgorithmOptions{8, 3, 0});
  EXPECT_EQ(s.straggler, 7);
  for (const Transfer& t : s.phases[0].transfers()) EXPECT_TRUE(t.src != 7 && t.dst != 7);
}

TEST(StragglarOnline, VerifiesForEveryNumberOfLateRanks) {
  int checked = 0;
  for (Rank n = 2; n <= 34; ++n) {
    for (std::uint32_t k = 1; k < n; ++k) {
      const Schedule s = online(n, k);
      EXPECT_EQ(first_problem(s), "") << "n=" << n << " k=" << k;
      const ReferenceResult r = execute_reference(s, 2);
      EXPECT_TRUE(r.correct) << "n=" << n << " k=" << k << ": " << r.first_mismatch;
      // The first n-k arrivals start alone: no late label takes part in the first phase.
      for (const Transfer& t : s.phases.front().transfers()) {
        EXPECT_TRUE(t.src < n - k && t.dst < n - k) << "n=" << n << " k=" << k;
      }
      ++checked;
    }
  }
  for (Rank n : {48u, 64u, 100u}) {
    for (std::uint32_t k : {1u, 2u, 3u, n / 2, n - 2, n - 1}) {
      const Schedule s = online(n, k);
      EXPECT_EQ(first_problem(s), "") << "n=" << n << " k=" << k;
      ++checked;
    }
  }
  EXPECT_GT(checked, 550);
}

// Phase j of the k > 1 schedule uses no late label beyond the one whose arrival decides it, so
// the engines can gate each phase on that arrival: fold j involves late rank m+j and ranks already
// present, and only the completion uses the last arrival, exactly as in StragglAR.
TEST(StragglarOnline, EachPhaseUsesLateLabelsInArrivalOrder) {
  for (Rank n : {5u, 11u}) {
    for (std::uint32_t k = 2; k < n; ++k) {
      const Schedule s = online(n, k);
      const Rank m = n - k;
      ASSERT_EQ(s.phases.size(), 1 + (k - 1) + 1) << k;
      EXPECT_EQ(s.num_chunks, n - 1);
      for (std::uint32_t j = 0; j + 1 < k; ++j) {
        const Phase& fold = s.phases[1 + j];
        EXPECT_EQ(fold.name(), "fold_" + std::to_string(j));
        EXPECT_EQ(fold.num_rounds(), n - 2u);
        for (const Transfer& t : fold.transfers()) {
          EXPECT_TRUE(t.src == m + j || t.dst == m + j) << "n=" << n << " k=" << k << " j=" << j;
          EXPECT_LE(std::max(t.src, t.dst), m + j);
          EXPECT_EQ(t.op, Op::Reduce);
        }
      }
      const Phase& completion = s.phases.back();
      EXPECT_EQ(completion.name(), "completion");
      // The last arrival's work is StragglAR's: the completion has the same rounds as stragglar's.
      EXPECT_EQ(completion.num_rounds(), generate_schedule("stragglar", AlgorithmOptions{n, {}, 0}).phases[1].num_rounds());
    }
  }
}

// Any relabelling the engines pick keeps the AllReduce correct.
TEST(StragglarOnline, RelabelledSchedulesStillVerify) {
  std::mt19937_64 rng(14);
  for (Rank n : {5u, 9u, 16u}) {
    for (std::uint32_t k : {1u, 2u, n - 1}) {
      Schedule s = online(n, k);
      std::vector<Rank> perm(n);
      std::iota(perm.begin(), perm.end(), Rank{0});
      for (Rank i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng() % (i + 1)]);
      s.relabel(perm);
      EXPECT_EQ(first_problem(s), "") << "n=" << n << " k=" << k;
    }
  }
}

TEST(StragglarOnline, RunTimeRelabellingPutsTheLastArrivalsOnTheLateLabels) {
  const Schedule s = online(6, 2);
  // Arrival order 5 0 4 1 2 3: early 5 0 4 1, then 2 and 3 late.
  const std::vector<Rank> order{5, 0, 4, 1, 2, 3};
  const std::vector<Rank> to = run_time_relabelling(s, order);
  EXPECT_EQ(to, (std::vector<Rank>{0, 1, 4, 5, 2, 3}));  // labels 0, 1 keep their rank
  Schedule relabelled = s;
  relabelled.relabel(to);
  EXPECT_EQ(relabelled.straggler, 3);
  EXPECT_EQ(first_problem(relabelled), "");
  // Nobody late in particular (arrival order = rank order): nothing moves.
  EXPECT_EQ(run_time_relabelling(s, std::vector<Rank>{0, 1, 2, 3, 4, 5}), (std::vector<Rank>{0, 1, 2, 3, 4, 5}));
  EXPECT_THROW((void)run_time_relabelling(s, std::vector<Rank>{0, 1, 2, 3, 4, 4}), ScheduleError);
  EXPECT_THROW((void)run_time_relabelling(s, std::vector<Rank>{0, 1, 2}), ScheduleError);
  Schedule none = s;
  none.late_ranks = 0;
  EXPECT_THROW((void)run_time_relabelling(none, order), ScheduleError);
}

TEST(StragglarOnline, RefusesLateRanksOutOfRange) {
  for (std::uint32_t k : {0u, 8u, 9u}) {
    try {
      (void)online(8, k);
      ADD_FAILURE() << "late_ranks = " << k << " accepted";
    } catch (const ScheduleError& e) {
      EXPECT_NE(std::string(e.what()).find("late_ranks = " + std::to_string(k)), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace collsim
