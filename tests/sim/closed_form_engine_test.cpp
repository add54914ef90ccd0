#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/closed_form.hpp"
#include "collsim/models/error.hpp"
#include "collsim/sim/closed_form_engine.hpp"
#include "collsim/sim/replay_engine.hpp"
#include "sim_test_support.hpp"

namespace collsim {
namespace {

const LinkModel kLink{3e-6, 450.0 * 1024 * 1024 * 1024, 0.0};

using test::config;

std::string config_error(const Schedule& s, const RunConfig& c) {
  try {
    (void)ClosedFormEngine().run(s, c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// Agreement on contention-free topologies, with and without a straggler (short enough to be
// partly hidden, and long), with and without reduction cost, in every start mode the formulas
// cover, at powers of two and other n. Algorithms without a formula are skipped, not passed.
TEST(ClosedFormEngine, AgreesWithReplay) {
  int compared = 0;
  for (const auto& info : all_algorithms()) {
    if (!info.has_closed_form()) continue;
    for (StartMode mode : {StartMode::Barrier, StartMode::Eager}) {
      for (Rank n : {2u, 3u, 4u, 5u, 6u, 8u, 12u, 16u, 17u, 32u}) {
        Schedule s;
        try {
          s = generate_schedule(info.name, AlgorithmOptions{n, {}, 0});
        } catch (const ScheduleError&) {
          continue;
        }
        for (double gamma : {0.0, 1.0 / 200e9}) {
          const LinkModel link{kLink.latency_s, kLink.bandwidth_Bps, gamma};
          for (const Topology& topo : {test::reducing(make_nvswitch(n, link)), make_full_mesh(n, link)}) {
            if (!test::fits(info, n, topo)) continue;
            for (double d : {0.0, 20e-6, 2e-3}) {
              std::vector<double> arrival(n, 0.0);
              arrival[n - 1] = d;
              const RunConfig c = config(topo, 1 << 30, mode, arrival);
              RunResult formula;
              try {
                formula = ClosedFormEngine().run(s, c);
              } catch (const ScheduleError& e) {
                ADD_FAILURE() << info.name << " n=" << n << " has_closed_form but: " << e.what();
                continue;
              }
              const RunResult replayed = ReplayEngine().run(s, c);
              const std::string what = std::string(info.name) + " n=" + std::to_string(n) + " " + topo.name + " " +
                                       start_mode_name(mode) + " d=" + std::to_string(d) +
                                       " gamma=" + std::to_string(gamma);
              EXPECT_EQ(formula.engine, "closed_form");
              EXPECT_NEAR(formula.time_s, replayed.time_s, 1e-9 * replayed.time_s) << what;
              EXPECT_NEAR(formula.time_after_last_arrival_s, replayed.time_after_last_arrival_s,
                          1e-9 * replayed.time_s) << what;
              ++compared;
            }
          }
        }
      }
    }
  }
  if (compared == 0) GTEST_SKIP() << "no closed form implemented yet";
}

// Both recursive halving/doubling variants at every kind of n (powers of two; plain pairs,
// triples and quads for 3-2 elimination), on the star, with and without a straggler and
// reduction cost, in both start modes.
TEST(ClosedFormEngine, RecursiveHalvingDoublingAgreesWithReplayAtManyN) {
  std::vector<Rank> ns;
  for (Rank n = 2; n <= 40; ++n) ns.push_back(n);
  for (Rank n : {63u, 64u, 65u, 96u, 97u, 127u, 191u, 200u}) ns.push_back(n);
  for (const std::string algo : {"recursive_halving_doubling", "recursive_halving_doubling_fold"}) {
    for (Rank n : ns) {
      const Schedule s = generate_schedule(algo, AlgorithmOptions{n, {}, 0});
      for (double gamma : {0.0, 1.0 / 200e9}) {
        const Topology star = make_nvswitch(n, LinkModel{kLink.latency_s, kLink.bandwidth_Bps, gamma});
        for (StartMode mode : {StartMode::Barrier, StartMode::Eager}) {
          for (double d : {0.0, 20e-6, 2e-3}) {
            std::vector<double> arrival(n, 0.0);
            arrival[n - 1] = d;
            const RunConfig c = config(star, 1 << 30, mode, arrival);
            const double formula = ClosedFormEngine().run(s, c).time_s;
            const double replayed = ReplayEngine().run(s, c).time_s;
            ASSERT_NEAR(formula, replayed, 1e-9 * replayed)
                << algo << " n=" << n << " " << start_mode_name(mode) << " d=" << d << " gamma=" << gamma;
          }
        }
      }
    }
  }
}

// Issue 11's bar for the baselines: at 1 GiB, alpha = 3 us, 450 GiB/s and the default reduction
// cost, recursive halving/doubling (replayed on the star) is no slower than Rabenseifner &
// Traeff's 3-2 elimination formula. At these n = 3 x 2^t it moves s (n - 1)/n per direction
// instead of s (1.5 - 1/p); MPICH's fold, the previous schedule, is s beta = 2.2 ms slower than
// the formula.
TEST(ClosedFormEngine, RecursiveHalvingDoublingNoSlowerThanThreeTwoElimination) {
  const LinkModel link;  // 3 us, 450 GiB/s, default gamma
  const double size = 1024.0 * 1024 * 1024;
  for (Rank n : {6u, 12u, 24u, 48u, 96u, 192u}) {
    const RunConfig c = config(make_nvswitch(n, link), size, StartMode::Barrier);
    const double bound = rhd_three_two_elimination_s(n, size, link);
    const double rhd =
        ReplayEngine().run(generate_schedule("recursive_halving_doubling", AlgorithmOptions{n, {}, 0}), c).time_s;
    const double fold =
        ReplayEngine().run(generate_schedule("recursive_halving_doubling_fold", AlgorithmOptions{n, {}, 0}), c).time_s;
    EXPECT_LE(rhd, bound * (1 + 1e-12)) << "n=" << n;
    EXPECT_GT(fold, bound * 1.2) << "n=" << n;
    // n = 3 x 2^t: the even levels and then subgroups of three move (and reduce) (n - 1)/n of
    // the buffer per rank, the optimum, in ceil(log2 n) rounds each way.
    const double rounds = 2.0 * std::bit_width(n - 1);
    const double moved = size * (n - 1) / n;
    EXPECT_NEAR(rhd, rounds * link.latency_s + 2 * moved / link.bandwidth_Bps + moved * link.gamma_s_per_byte,
                1e-9 * rhd) << "n=" << n;
  }
}

TEST(ClosedFormEngine, RejectsWhatTheFormulasDoNotDescribe) {
  const Schedule ring = generate_schedule("ring", AlgorithmOptions{4, {}, 0});
  const Topology star = make_nvswitch(4, kLink);
  EXPECT_NE(config_error(ring, config(star, 1, StartMode::Barrier, {0, 1e-3, 0, 2e-3})).find("one late rank"),
            std::string::npos);
  EXPECT_NE(config_error(ring, config(make_dgx1(4, kLink), 1, StartMode::Barrier)).find("nvswitch or full_mesh"),
            std::string::npos);
  EXPECT_NE(config_error(ring, config(star, 1, StartMode::Barrier, {0, 0})).find("arrival"), std::string::npos);
  EXPECT_NE(config_error(ring, config(make_nvswitch(5, kLink), 1, StartMode::Barrier)).find("5 GPUs"),
            std::string::npos);
  // A straggler-aware schedule built for rank 3 says nothing about rank 1 being late.
  Schedule aware = ring;
  aware.straggler = 3;
  EXPECT_NE(config_error(aware, config(star, 1, StartMode::Barrier, {0, 1e-3, 0, 0})).find("straggler rank 3"),
            std::string::npos);
  // The formulas have no per-round launches: a p2p_rounds run with one is refused, not answered
  // wrongly; nor is a fused launch with a late rank in barrier mode (the gates open unshifted).
  RunConfig launched = config(star, 1, StartMode::Barrier);
  launched.execution = ExecutionCosts{ExecutionStyle::P2pRounds, 5e-6};
  EXPECT_NE(config_error(ring, launched).find("p2p_rounds"), std::string::npos);
  RunConfig fused_late = config(star, 1, StartMode::Barrier, {0, 1e-3, 0, 0});
  fused_late.execution = ExecutionCosts{ExecutionStyle::Fused, 5e-6};
  EXPECT_NE(config_error(ring, fused_late).find("barrier mode"), std::string::npos);
}

// A fused launch is one per rank at its arrival: the closed forms add it and agree with replay to
// 1e-9 when every rank arrives together (both modes) and with a late rank starting eagerly.
TEST(ClosedFormEngine, FusedLaunchAgreesWithReplay) {
  const double size = 256e6;
  for (const auto& info : all_algorithms()) {
    if (!info.has_closed_form()) continue;
    for (const Rank n : {4u, 8u}) {
      if (!info.unsupported_reason(n, topology_context(make_nvswitch(n, kLink))).empty()) continue;
      const Schedule s = generate_schedule(info.name, AlgorithmOptions{n, n - 1, 0});
      if (info.relabel_at_run_time) {
        // The agreement gate overlaps the launch: refused rather than answered wrongly.
        RunConfig c = config(make_nvswitch(n, kLink), size, StartMode::Eager);
        c.execution = ExecutionCosts{ExecutionStyle::Fused, 17e-6};
        EXPECT_NE(config_error(s, c).find("agreement gate"), std::string::npos) << info.name;
        continue;
      }
      for (const StartMode mode : {StartMode::Barrier, StartMode::Eager}) {
        for (const double delay : {0.0, 2e-3}) {
          if (delay > 0 && mode == StartMode::Barrier) continue;
          std::vector<double> arrival(n, 0.0);
          arrival[n - 1] = delay;
          RunConfig c = config(make_nvswitch(n, kLink), size, mode, arrival);
          c.execution = ExecutionCosts{ExecutionStyle::Fused, 17e-6};
          const double closed = ClosedFormEngine().run(s, c).time_s;
          const double replayed = ReplayEngine().run(s, c).time_s;
          EXPECT_NEAR(closed / replayed, 1.0, 1e-9) << info.name << " n=" << n << " delay=" << delay;
          RunConfig no_launch = c;
          no_launch.execution = {};
          EXPECT_NEAR(closed - ClosedFormEngine().run(s, no_launch).time_s, 17e-6, 1e-12) << info.name;
        }
      }
    }
  }
}

// The table's closed_form field is the engine's only source: a row with a formula runs for
// every n it supports, in both modes, and a schedule whose algorithm is not in the table is refused.
TEST(ClosedFormEngine, AcceptsExactlyTheRowsWithAClosedForm) {
  for (const auto& info : all_algorithms()) {
    for (Rank n : {2u, 5u, 8u}) {
      const Schedule s = generate_schedule(info.name, AlgorithmOptions{n, {}, 0, info.hierarchical ? 1u : 0u});
      for (StartMode mode : {StartMode::Barrier, StartMode::Eager}) {
        std::vector<double> arrival(n, 0.0);
        arrival[n - 1] = 1e-3;
        const RunConfig c = config(test::reducing(make_nvswitch(n, kLink)), 1 << 20, mode, arrival);
        if (info.has_closed_form()) {
          EXPECT_NO_THROW((void)ClosedFormEngine().run(s, c)) << info.name << " n=" << n;
        } else {
          EXPECT_THROW((void)ClosedFormEngine().run(s, c), ScheduleError) << info.name << " n=" << n;
        }
      }
    }
  }
  Schedule unknown = generate_schedule("ring", AlgorithmOptions{4, {}, 0});
  unknown.algorithm = "not_in_the_table";
  EXPECT_NE(config_error(unknown, config(make_nvswitch(4, kLink), 1, StartMode::Barrier)).find("not_in_the_table"),
            std::string::npos);
}

// closed_form_any_late_rank is a claim about the schedule (symmetric under rotation): where a row
// makes it, the eager formula must match replay whichever rank is late; where an oblivious row
// does not, the engine refuses a late rank other than n-1 in eager mode.
TEST(ClosedFormEngine, AnyLateRankFlagHoldsAndIsEnforced) {
  int checked = 0;
  for (const auto& info : all_algorithms()) {
    if (!info.has_closed_form() || info.straggler_aware) continue;
    for (Rank n : {3u, 4u, 6u, 8u}) {
      // Hierarchical rows need a node size: one GPU per node on a star is their flat form.
      const Schedule s = generate_schedule(info.name, AlgorithmOptions{n, {}, 0, info.hierarchical ? 1u : 0u});
      for (Rank late = 0; late + 1 < n; ++late) {
        std::vector<double> arrival(n, 0.0);
        arrival[late] = 20e-6;
        const RunConfig c = config(test::reducing(make_nvswitch(n, kLink)), 1 << 30, StartMode::Eager, arrival);
        if (info.closed_form_any_late_rank) {
          const double replayed = ReplayEngine().run(s, c).time_s;
          EXPECT_NEAR(ClosedFormEngine().run(s, c).time_s, replayed, 1e-9 * replayed)
              << info.name << " n=" << n << " late=" << late;
          ++checked;
        } else {
          EXPECT_NE(config_error(s, c).find("(n-1)"), std::string::npos) << info.name << " n=" << n;
        }
      }
    }
  }
  EXPECT_GT(checked, 0) << "no row claims closed_form_any_late_rank";
}

TEST(EngineFactory, KnownAndUnknownNames) {
  EXPECT_EQ(make_engine("replay")->name(), "replay");
  EXPECT_EQ(make_engine("closed_form")->name(), "closed_form");
  try {
    (void)make_engine("fluid");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("closed_form, replay, simgrid"), std::string::npos);
  }
  try {
    EXPECT_EQ(make_engine("simgrid")->name(), "simgrid");
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("not built"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace collsim
