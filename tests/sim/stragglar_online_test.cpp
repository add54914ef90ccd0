// Run-time relabelling in the execution core (RunPlan) and stragglar_online in every engine:
// the plan picks the ranks that really come last, each phase waits for the agreement, and
// replay (both paths), SimGrid and the closed form agree to 1e-9 and all charge the agreement.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"
#include "collsim/sim/closed_form_engine.hpp"
#include "collsim/sim/replay_engine.hpp"
#include "collsim/sim/simgrid_engine.hpp"
#include "execution_core.hpp"
#include "sim_test_support.hpp"

namespace collsim {
namespace {

using test::config;
using test::kLink;

Schedule online(Rank n, std::uint32_t k = 1) {
  AlgorithmOptions options;
  options.n = n;
  options.late_ranks = k;
  return generate_schedule("stragglar_online", options);
}

std::vector<double> random_arrivals(std::mt19937_64& rng, Rank n, double spread_s) {
  std::vector<double> a(n);
  for (double& x : a) x = spread_s * static_cast<double>(rng() % 1000) / 1000.0;
  return a;
}

// Ranks in arrival order, ties by rank (the plan's rule).
std::vector<Rank> arrival_order(const std::vector<double>& a) {
  std::vector<Rank> order(a.size());
  for (Rank r = 0; r < a.size(); ++r) order[r] = r;
  std::stable_sort(order.begin(), order.end(), [&](Rank x, Rank y) { return a[x] < a[y]; });
  return order;
}

TEST(RunPlan, RelabelsForTheRanksThatArriveLast) {
  std::mt19937_64 rng(7);
  for (Rank n : {2u, 5u, 8u, 13u}) {
    for (std::uint32_t k = 1; k < n; ++k) {
      const Schedule s = online(n, k);
      for (int trial = 0; trial < 5; ++trial) {
        const std::vector<double> a = random_arrivals(rng, n, 1e-3);
        const detail::RunPlan plan(s, config(make_nvswitch(n, kLink), 1 << 20, StartMode::Eager, a));
        const std::vector<Rank> order = arrival_order(a);
        EXPECT_EQ(plan.schedule().straggler, static_cast<std::int64_t>(order.back())) << n << " " << k;
        // The first phase is the early ranks' alone: nobody among the k last arrivals is in it.
        const std::vector<Rank> first = participants(plan.schedule().phases.front(), n);
        for (std::uint32_t j = n - k; j < n; ++j) {
          EXPECT_FALSE(std::binary_search(first.begin(), first.end(), order[j])) << n << " " << k;
        }
        // A fold names the late rank whose arrival it waits for.
        for (std::uint32_t j = 0; j + 1 < k; ++j) {
          EXPECT_EQ(plan.schedule().phases[1 + j].transfers().front().src, order[n - k + j]);
        }
      }
    }
  }
}

TEST(RunPlan, GatesEachPhaseOnItsDecisionPlusTheAgreement) {
  const Rank n = 6;
  const std::vector<double> a{4e-6, 0.0, 9e-6, 1e-6, 30e-6, 2e-6};  // order 1 3 5 0 2 4
  RunConfig c = config(make_nvswitch(n, kLink), 1 << 20, StartMode::Eager, a);
  c.agreement_s = 5e-6;
  {
    const detail::RunPlan plan(online(n, 1), c);
    ASSERT_EQ(plan.gate_s().size(), 2u);
    EXPECT_DOUBLE_EQ(plan.gate_s()[0], 9e-6 + 5e-6);   // second-to-last arrival (rank 2)
    EXPECT_DOUBLE_EQ(plan.gate_s()[1], 30e-6 + 5e-6);  // the last (rank 4)
    EXPECT_DOUBLE_EQ(plan.agreement_s(), 5e-6);
  }
  {
    const detail::RunPlan plan(online(n, 3), c);  // early: 1 3 5; late in order: 0 2 4
    ASSERT_EQ(plan.gate_s().size(), 4u);         // reduce_scatter, fold_0, fold_1, completion
    EXPECT_DOUBLE_EQ(plan.gate_s()[0], 2e-6 + 5e-6);
    EXPECT_DOUBLE_EQ(plan.gate_s()[1], 4e-6 + 5e-6);
    EXPECT_DOUBLE_EQ(plan.gate_s()[2], 9e-6 + 5e-6);
    EXPECT_DOUBLE_EQ(plan.gate_s()[3], 30e-6 + 5e-6);
  }
  // Not relabelled at run time: the plan is the barrier rule and nothing else.
  const detail::RunPlan ring(generate_schedule("ring", AlgorithmOptions{n, {}, 0}), c);
  EXPECT_FALSE(ring.relabelled_at_run_time());
  EXPECT_DOUBLE_EQ(ring.gate_s()[0], 0.0);
  EXPECT_DOUBLE_EQ(ring.agreement_s(), 0.0);
}

TEST(RunPlan, DefaultAgreementIsAFlagWriteAndRead) {
  EXPECT_DOUBLE_EQ(detail::default_agreement_s(make_nvswitch(8, kLink)), 2 * kLink.latency_s);
  const detail::RunPlan plan(online(8), config(make_nvswitch(8, kLink), 1 << 20));
  EXPECT_DOUBLE_EQ(plan.agreement_s(), 2 * kLink.latency_s);
  RunConfig bad = config(make_nvswitch(8, kLink), 1 << 20);
  bad.agreement_s = -1e-6;
  EXPECT_THROW(detail::RunPlan(online(8), bad), ConfigError);
}

std::vector<RunResult> every_engine(const Schedule& s, const RunConfig& c, bool with_closed_form) {
  std::vector<RunResult> out;
  ReplayEngine fast;
  out.push_back(fast.run(s, c));
  EXPECT_TRUE(fast.last_run_was_fast());
  out.push_back(ReplayEngine(ReplayOptions{false, true}).run(s, c));
  out.push_back(make_simgrid_engine()->run(s, c));
  if (with_closed_form) out.push_back(ClosedFormEngine().run(s, c));
  return out;
}

// Engines agree to 1e-9 with run-time detection, whichever rank is late, k = 1 with the closed
// form, k > 1 without it.
TEST(StragglarOnlineEngines, AgreeWithRunTimeDetection) {
  std::mt19937_64 rng(21);
  for (StartMode mode : {StartMode::Eager, StartMode::Barrier}) {
    for (Rank n : {3u, 4u, 7u, 8u}) {
      for (Rank late = 0; late < n; late += 2) {
        for (double d : {0.0, 30e-6, 3e-3}) {
          std::vector<double> a(n, 0.0);
          a[late] = d;
          const RunConfig c = config(make_nvswitch(n, kLink), 1 << 26, mode, a);
          const auto r = every_engine(online(n), c, true);
          for (const RunResult& x : r) {
            EXPECT_NEAR(x.time_s, r.front().time_s, 1e-9 * r.front().time_s)
                << x.engine << " n=" << n << " late=" << late << " d=" << d << " " << start_mode_name(mode);
          }
        }
      }
      for (std::uint32_t k : {2u, n - 1}) {
        const RunConfig c = config(make_nvswitch(n, kLink), 1 << 26, mode, random_arrivals(rng, n, 2e-3));
        const auto r = every_engine(online(n, k), c, false);
        for (const RunResult& x : r) {
          EXPECT_NEAR(x.time_s, r.front().time_s, 1e-9 * r.front().time_s) << x.engine << " n=" << n << " k=" << k;
        }
      }
    }
  }
}

// The agreement is charged in every engine: with one late rank whose delay hides the
// ReduceScatter, it adds exactly its cost after the last arrival.
TEST(StragglarOnlineEngines, ChargeTheAgreementCost) {
  const Rank n = 8;
  std::vector<double> a(n, 0.0);
  a[2] = 5e-3;
  RunConfig free = config(make_nvswitch(n, kLink), 1 << 26, StartMode::Eager, a);
  free.agreement_s = 0.0;
  RunConfig paid = free;
  paid.agreement_s = 7e-6;
  const auto r0 = every_engine(online(n), free, true);
  const auto r1 = every_engine(online(n), paid, true);
  for (std::size_t i = 0; i < r0.size(); ++i) {
    EXPECT_NEAR(r1[i].time_after_last_arrival_s - r0[i].time_after_last_arrival_s, 7e-6, 1e-12) << r0[i].engine;
  }
  // With k = 2 too (no closed form): both decisions are waited for.
  std::vector<double> b(n, 0.0);
  b[1] = 3e-3;
  b[6] = 6e-3;
  free.arrival_s = paid.arrival_s = b;
  const auto k0 = every_engine(online(n, 2), free, false);
  const auto k1 = every_engine(online(n, 2), paid, false);
  for (std::size_t i = 0; i < k0.size(); ++i) {
    EXPECT_NEAR(k1[i].time_after_last_arrival_s - k0[i].time_after_last_arrival_s, 7e-6, 1e-12) << k0[i].engine;
  }
}

// Relabelled for the true last arrival, stragglar_online with a free agreement takes exactly the
// time of stragglar built for that rank in advance, and beats stragglar built for another one.
TEST(StragglarOnlineEngines, MatchesStragglarBuiltForTheTrueLateRank) {
  for (Rank n : {4u, 6u, 8u, 9u}) {
    for (Rank late = 0; late < n; ++late) {
      std::vector<double> a(n, 0.0);
      a[late] = 4e-3;
      RunConfig c = config(make_nvswitch(n, kLink), 1 << 28, StartMode::Eager, a);
      c.agreement_s = 0.0;
      const double t_online = ReplayEngine().run(online(n), c).time_s;
      const double t_right = ReplayEngine().run(generate_schedule("stragglar", AlgorithmOptions{n, late, 0}), c).time_s;
      const Rank wrong = (late + 1) % n;
      const double t_wrong = ReplayEngine().run(generate_schedule("stragglar", AlgorithmOptions{n, wrong, 0}), c).time_s;
      EXPECT_NEAR(t_online, t_right, 1e-12) << "n=" << n << " late=" << late;
      EXPECT_LT(t_online, t_wrong) << "n=" << n << " late=" << late;
    }
  }
}

// The cost model of k late ranks (docs/stragglar_online.md): when each late rank arrives after
// the previous one's fold is done, the time after the last arrival is StragglAR's completion
// plus the agreement, exactly as with one late rank.
TEST(StragglarOnlineEngines, FoldedLateRanksLeaveOnlyTheCompletion) {
  for (Rank n : {6u, 8u, 13u}) {
    std::vector<double> one(n, 0.0);
    one[n - 1] = 50e-3;
    const RunConfig c1 = config(make_nvswitch(n, kLink), 1 << 28, StartMode::Eager, one);
    const double single = ReplayEngine().run(online(n), c1).time_after_last_arrival_s;
    for (std::uint32_t k = 2; k < n; ++k) {
      std::vector<double> a(n, 0.0);
      for (std::uint32_t j = 0; j < k; ++j) a[(5 * j + 1) % n] = 10e-3 * (j + 1);  // distinct ranks (gcd(5, n) = 1), far apart
      const RunConfig c = config(make_nvswitch(n, kLink), 1 << 28, StartMode::Eager, a);
      EXPECT_NEAR(ReplayEngine().run(online(n, k), c).time_after_last_arrival_s, single, 1e-12) << n << " " << k;
    }
  }
}

// Late ranks that arrive closer together than a fold lasts (about s*beta) fold in side by side:
// the time after the last arrival depends on the last gap, not on how many came before.
TEST(StragglarOnlineEngines, FoldsOfCloseArrivalsOverlap) {
  const Rank n = 16;
  const auto after_last = [&](std::uint32_t k) {
    std::vector<double> a(n, 0.0);
    for (std::uint32_t j = 0; j < k; ++j) a[n - 1 - j] = 10e-3 + 1e-3 * (k - j);  // 1 ms apart
    const RunConfig c = config(make_nvswitch(n, kLink), 1 << 30, StartMode::Eager, a);
    return ReplayEngine().run(online(n, k), c).time_after_last_arrival_s;
  };
  const double two = after_last(2);
  for (std::uint32_t k : {3u, 5u, 8u}) EXPECT_NEAR(after_last(k), two, 1e-6) << k;
}

TEST(StragglarOnlineEngines, ClosedFormRefusesMoreThanOneExpectedLateRank) {
  const RunConfig c = config(make_nvswitch(6, kLink), 1 << 20, StartMode::Eager);
  try {
    (void)ClosedFormEngine().run(online(6, 2), c);
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("expects 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace collsim
