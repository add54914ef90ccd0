// Closed forms against hand-computed values (paper parameters: alpha = 3 us, 450 GiB/s, 1 GiB),
// start modes, and bad input. That every formula equals the dataflow time of its generated
// schedule is checked in tests/algorithms/baselines_test.cpp.
#include "collsim/models/closed_form.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "collsim/models/error.hpp"

namespace collsim {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kAlpha = 3e-6;
constexpr double kSbeta = 1.0 / 450;  // seconds to move 1 GiB at 450 GiB/s

// The formulas by registry name: models/ knows no names (the algorithm table in algorithms/
// points at these functions), so the test keeps its own lookup.
ClosedFormFn formula(const std::string& algorithm) {
  static const std::map<std::string, ClosedFormFn> kFormulas{
      {"ring", &ring_closed_form},
      {"recursive_halving_doubling", &recursive_halving_doubling_closed_form},
      {"recursive_doubling", &recursive_doubling_closed_form},
      {"direct", &direct_closed_form},
      {"binomial_tree", &binomial_tree_closed_form},
      {"straggler_tree", &straggler_tree_closed_form},
      {"double_binary_tree", &double_binary_tree_closed_form},
      {"stragglar", &stragglar_closed_form},
      {"recursive_halving_doubling_fold", &recursive_halving_doubling_fold_closed_form}};
  return kFormulas.at(algorithm);
}

// An input together with the formula it is for.
struct Case {
  ClosedFormFn fn = nullptr;
  ClosedFormInput in;
};

ClosedFormResult closed_form_time(const Case& c) { return c.fn(c.in); }

constexpr std::uint32_t kPipelineChunks = 8;  // the trees' default depth in the algorithm table

Case paper(const std::string& algorithm, std::uint32_t n, double delay_s = 0, StartMode start = StartMode::Barrier) {
  Case c;
  c.fn = formula(algorithm);
  ClosedFormInput& in = c.in;
  in.n = n;
  in.pipeline_chunks = kPipelineChunks;
  in.size_bytes = kGiB;
  in.link = LinkModel{kAlpha, 450 * kGiB, 0.0};
  in.delay_s = delay_s;
  in.start = start;
  return c;
}

double time_of(const Case& c) { return closed_form_time(c).time_s; }

TEST(ClosedForm, RingPaperNumbers) {
  const double t = 14 * kAlpha + 14.0 / 8 * kSbeta;
  const ClosedFormResult r = closed_form_time(paper("ring", 8));
  EXPECT_NEAR(r.time_s, t, 1e-15);
  EXPECT_NEAR(r.collective_s, t, 1e-15);
  EXPECT_EQ(r.rounds, 14u);
  for (StartMode mode : {StartMode::Barrier, StartMode::Eager}) {
    const ClosedFormResult late = closed_form_time(paper("ring", 8, 5e-3, mode));
    EXPECT_NEAR(late.time_s, 5e-3 + t, 1e-15);
    EXPECT_NEAR(late.time_after_last_arrival_s, t, 1e-15);
  }
}

TEST(ClosedForm, RingWithReductionCost) {
  Case in = paper("ring", 4);
  in.in.link.gamma_s_per_byte = 1.0 / (200 * kGiB);
  const double quarter = 0.25;
  const double t = 3 * (kAlpha + quarter * kSbeta + quarter / 200) + 3 * (kAlpha + quarter * kSbeta);
  EXPECT_NEAR(time_of(in), t, 1e-15);
}

TEST(ClosedForm, StragglarHidesTheReduceScatterOnlyWhenTheDelayIsLongEnough) {
  const double chunk = kAlpha + kSbeta / 7;
  const double t_rs = 6 * chunk;
  const double t_sar = 9 * chunk;  // R = n - 2 + log2 n = 9 for n = 8
  for (StartMode mode : {StartMode::Barrier, StartMode::Eager}) {
    const ClosedFormResult short_delay = closed_form_time(paper("stragglar", 8, 1e-3, mode));
    ASSERT_LT(1e-3, t_rs);
    EXPECT_NEAR(short_delay.time_s, t_rs + t_sar, 1e-15);
    EXPECT_NEAR(short_delay.time_after_last_arrival_s, t_rs + t_sar - 1e-3, 1e-15);
    const ClosedFormResult long_delay = closed_form_time(paper("stragglar", 8, 5e-3, mode));
    EXPECT_NEAR(long_delay.time_s, 5e-3 + t_sar, 1e-15);
    EXPECT_NEAR(long_delay.time_after_last_arrival_s, t_sar, 1e-15);
    EXPECT_NEAR(long_delay.collective_s, t_rs + t_sar, 1e-15);
    EXPECT_EQ(long_delay.rounds, 6u + 9u);
  }
  // The round count of the schedule in use (4 ReduceScatter + 7 completion rounds) replaces the
  // power-of-two default.
  Case six = paper("stragglar", 6, 1.0);
  six.in.schedule_rounds = 4 + 7;
  EXPECT_NEAR(time_of(six), 1.0 + 7 * (kAlpha + kSbeta / 5), 1e-12);
  // The 2x claim: for large n StragglAR after the delay tends to s beta, Ring to 2 s beta.
  const double big = closed_form_time(paper("stragglar", 1024, 1.0)).time_after_last_arrival_s;
  const double ring = closed_form_time(paper("ring", 1024, 1.0)).time_after_last_arrival_s;
  EXPECT_GT(ring / big, 1.9);
}

TEST(ClosedForm, RecursiveHalvingDoubling) {
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling", 8)), 6 * kAlpha + 14.0 / 8 * kSbeta, 1e-15);
  // n = 6 = 2 x 3: halve 1/2 over all six, then each three exchange 1/6 twice, and back. Every
  // rank is busy in every round, so in eager mode too a delay costs itself.
  const double t6 = 2 * (kAlpha + kSbeta / 2) + 4 * (kAlpha + kSbeta / 6);
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling", 6)), t6, 1e-15);
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling", 6, 1e-3)), 1e-3 + t6, 1e-15);
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling", 6, 1e-3, StartMode::Eager)), 1e-3 + t6, 1e-15);
  EXPECT_EQ(closed_form_time(paper("recursive_halving_doubling", 6)).rounds, 6u);
  // n = 18 = 2 x 9: halve 1/2, then two radix-3 levels: 1/6 twice, 1/18 twice.
  const double t18 = 2 * (kAlpha + kSbeta / 2) + 4 * (kAlpha + kSbeta / 6) + 4 * (kAlpha + kSbeta / 18);
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling", 18)), t18, 1e-15);
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling", 18, 1e-3, StartMode::Eager)), 1e-3 + t18, 1e-15);
  EXPECT_EQ(closed_form_time(paper("recursive_halving_doubling", 18)).rounds, 10u);
  // n = 10 = 2 x 5: halve 1/2, then each five (one triple, one plain pair) eliminates 1/4
  // twice and halves 1/8. The straggler (rank 9) is in a plain pair, which needs it for one
  // exchange while the triples take two rounds, so eager mode hides up to one of them.
  const double t10 = 2 * (kAlpha + kSbeta / 2) + 4 * (kAlpha + kSbeta / 4) + 2 * (kAlpha + kSbeta / 8);
  const double quarter = kAlpha + kSbeta / 4;
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling", 10)), t10, 1e-15);
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling", 10, 0.5e-3, StartMode::Eager)), t10, 1e-15);
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling", 10, 1e-3, StartMode::Eager)), 1e-3 + t10 - quarter, 1e-15);
  // n = 5 (one triple, one plain pair holding the straggler): eliminate 1/2 twice, halve 1/4,
  // and back. In eager mode a delay shorter than one elimination round is hidden, a longer one
  // costs all but that round.
  const double half = kAlpha + kSbeta / 2;
  const double t5 = 4 * half + 2 * (kAlpha + kSbeta / 4);
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling", 5)), t5, 1e-15);
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling", 5, 1e-3, StartMode::Eager)), t5, 1e-15);
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling", 5, 5e-3, StartMode::Eager)), 5e-3 + t5 - half, 1e-15);
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling", 5, 5e-3)), 5e-3 + t5, 1e-15);
}

TEST(ClosedForm, RecursiveHalvingDoublingFold) {
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling_fold", 8)), 6 * kAlpha + 14.0 / 8 * kSbeta, 1e-15);
  // n = 6: fold 1 GiB, halve 1/2 and 1/4, double 1/4 and 1/2, unfold 1 GiB.
  const double fold = kAlpha + kSbeta;
  const double t0 = fold + 4 * kAlpha + 1.5 * kSbeta + fold;
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling_fold", 6)), t0, 1e-15);
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling_fold", 6, 1e-3)), 1e-3 + t0, 1e-15);
  // Eager: the straggler is not in the fold, so a delay shorter than the fold costs nothing.
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling_fold", 6, 1e-3, StartMode::Eager)), t0, 1e-15);
  EXPECT_NEAR(time_of(paper("recursive_halving_doubling_fold", 6, 5e-3, StartMode::Eager)), 5e-3 + t0 - fold, 1e-15);
  EXPECT_EQ(closed_form_time(paper("recursive_halving_doubling_fold", 6)).rounds, 6u);
}

// Against Rabenseifner & Traeff's 3-2 elimination bound: equal at odd n, below it by
// s beta (1 - 1/2^t) at n = 2^t g (g odd > 1), because the elimination runs on windows of
// s / 2^t; at powers of two it is the plain hypercube. The fold exceeds it by s beta.
TEST(ClosedForm, RecursiveHalvingDoublingMeetsTheThreeTwoEliminationBound) {
  const LinkModel link{kAlpha, 450 * kGiB, 0.0};
  for (std::uint32_t n = 2; n <= 300; ++n) {
    const double bound = rhd_three_two_elimination_s(n, kGiB, link);
    const double rhd = time_of(paper("recursive_halving_doubling", n));
    const double fold = time_of(paper("recursive_halving_doubling_fold", n));
    if (std::has_single_bit(n)) {
      EXPECT_LT(rhd, bound) << n;
      EXPECT_EQ(rhd, fold) << n;
      continue;
    }
    // Subgroups of 3 and 9 reach the bandwidth optimum 2 s beta (n - 1) / n.
    const std::uint32_t g = n >> std::countr_zero(n);
    const double p = std::bit_floor(n);
    const double below = kSbeta * (g == 3 || g == 9 ? 1 - 2 / p + 2.0 / n : 1 - 1.0 / (1u << std::countr_zero(n)));
    EXPECT_NEAR(rhd, bound - below, 1e-12 * bound) << n;
    EXPECT_LE(rhd, bound * (1 + 1e-12)) << n;
    EXPECT_NEAR(fold - bound, kSbeta, 1e-12) << n;
  }
  // The fold hides more of a delay in eager mode, but never enough to win, without reduction
  // cost or with one moderately slower than the link (gamma = 2.4 beta here; see
  // docs/recursive_halving_doubling.md for where a much slower reduction tips n = 3 2^t).
  for (std::uint32_t n : {3u, 5u, 6u, 7u, 9u, 10u, 12u, 13u, 18u, 24u, 96u, 191u}) {
    for (double gamma : {0.0, 1.0 / 200e9}) {
      for (double d : {0.0, 1e-4, 1e-3, 3e-3, 1e-2}) {
        for (StartMode mode : {StartMode::Barrier, StartMode::Eager}) {
          Case rhd = paper("recursive_halving_doubling", n, d, mode);
          rhd.in.link.gamma_s_per_byte = gamma;
          Case fold = rhd;
          fold.fn = formula("recursive_halving_doubling_fold");
          EXPECT_LT(time_of(rhd), time_of(fold)) << n << " d=" << d << " " << start_mode_name(mode);
        }
      }
    }
  }
}

TEST(ClosedForm, RabenseifnerTraeffReferenceFormula) {
  const LinkModel link{kAlpha, 450 * kGiB, 0.0};
  EXPECT_NEAR(rhd_three_two_elimination_s(6, kGiB, link), 6 * kAlpha + 2 * kSbeta * 1.25, 1e-15);
  EXPECT_NEAR(rhd_three_two_elimination_s(12, kGiB, link), 8 * kAlpha + 2 * kSbeta * (1.5 - 1.0 / 8), 1e-15);
  EXPECT_THROW((void)rhd_three_two_elimination_s(1, kGiB, link), ConfigError);
}

TEST(ClosedForm, RecursiveDoubling) {
  EXPECT_NEAR(time_of(paper("recursive_doubling", 8)), 3 * (kAlpha + kSbeta), 1e-15);
  EXPECT_NEAR(time_of(paper("recursive_doubling", 5)), 4 * (kAlpha + kSbeta), 1e-15);
}

TEST(ClosedForm, Direct) {
  // n = 8: ring AllReduce of 1 GiB among 7 during the delay, then 1 exchange + 2 doubling rounds.
  const double ready = 12 * (kAlpha + kSbeta / 7);
  const double after = 3 * (kAlpha + kSbeta);
  for (StartMode mode : {StartMode::Barrier, StartMode::Eager}) {
    EXPECT_NEAR(time_of(paper("direct", 8, 0, mode)), ready + after, 1e-15);
    EXPECT_NEAR(time_of(paper("direct", 8, 1e-3, mode)), ready + after, 1e-15);
    const ClosedFormResult r = closed_form_time(paper("direct", 8, 5e-3, mode));
    EXPECT_NEAR(r.time_s, 5e-3 + after, 1e-15);
    EXPECT_NEAR(r.time_after_last_arrival_s, after, 1e-15);  // the paper's log2 n (alpha + s beta)
    EXPECT_EQ(r.rounds, 12u + 3u);
  }
  EXPECT_NEAR(time_of(paper("direct", 2, 1e-3)), 1e-3 + kAlpha + kSbeta, 1e-15);
}

TEST(ClosedForm, Trees) {
  const double step = kAlpha + kSbeta / 8;  // one of 8 chunks
  // Binomial, n = 8: 8 periods of 3 reduce rounds, then 3 + 2 + 1 broadcast rounds.
  EXPECT_NEAR(time_of(paper("binomial_tree", 8)), 30 * step, 1e-15);
  EXPECT_EQ(closed_form_time(paper("binomial_tree", 8)).rounds, 30u);
  // Binomial, n = 6: 24 reduce rounds and a drain of 4; eager hides the one root round of period 0
  // that does not wait for the straggler (rank 5 sits two levels below the root).
  EXPECT_NEAR(time_of(paper("binomial_tree", 6, 1.0)), 1.0 + 28 * step, 1e-12);
  EXPECT_NEAR(time_of(paper("binomial_tree", 6, 1.0, StartMode::Eager)), 1.0 + 27 * step, 1e-12);
  EXPECT_NEAR(time_of(paper("binomial_tree", 6, 1e-6, StartMode::Eager)), 28 * step, 1e-15);
  // Double binary tree, n = 8, 4 chunks per tree: a chain of 22 rounds.
  EXPECT_NEAR(time_of(paper("double_binary_tree", 8)), 22 * step, 1e-15);
  // Straggler tree, n = 8: 18 reduce rounds among the 7 ready ranks (hidden by a long delay),
  // then 8 exchange rounds, 8 broadcast rounds and a drain of 2.
  EXPECT_NEAR(time_of(paper("straggler_tree", 8, 1.0)), 1.0 + 18 * step, 1e-12);
  EXPECT_NEAR(time_of(paper("straggler_tree", 8)), 36 * step, 1e-15);
  Case deeper = paper("straggler_tree", 8, 1.0);
  deeper.in.pipeline_chunks = 16;
  EXPECT_NEAR(time_of(deeper), 1.0 + 34 * (kAlpha + kSbeta / 16), 1e-12);
}

TEST(ClosedForm, BarrierNeverBeatsEager) {
  for (const std::string algo : {"ring", "recursive_halving_doubling", "recursive_halving_doubling_fold",
                                 "recursive_doubling", "binomial_tree", "double_binary_tree", "direct",
                                 "straggler_tree", "stragglar"}) {
    for (std::uint32_t n : {2u, 4u, 6u, 7u, 8u, 16u, 30u}) {
      if (algo == "stragglar" && !std::has_single_bit(n)) continue;
      for (double d : {0.0, 1e-5, 1e-3, 1e-1}) {
        const double barrier = time_of(paper(algo, n, d, StartMode::Barrier));
        const double eager = time_of(paper(algo, n, d, StartMode::Eager));
        EXPECT_LE(eager, barrier * (1 + 1e-12)) << algo << " n=" << n << " d=" << d;
        EXPECT_GE(eager, std::max(d, closed_form_time(paper(algo, n)).collective_s) * (1 - 1e-12)) << algo;
      }
    }
  }
}

template <typename E>
std::string error_of(const Case& c) {
  try {
    (void)closed_form_time(c);
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ClosedForm, RejectsBadInput) {
  EXPECT_NE(error_of<ConfigError>(paper("ring", 1)).find("n = 1"), std::string::npos);
  EXPECT_NE(error_of<ConfigError>(paper("ring", 0)).find("n = 0"), std::string::npos);
  Case in = paper("ring", 8);
  in.in.size_bytes = -1;
  EXPECT_NE(error_of<ConfigError>(in).find("size_bytes = -1"), std::string::npos);
  in.in.size_bytes = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(error_of<ConfigError>(in).find("size_bytes"), std::string::npos);
  in = paper("ring", 8, -1e-3);
  EXPECT_NE(error_of<ConfigError>(in).find("delay_s = -0.001"), std::string::npos);
  in = paper("ring", 8, std::numeric_limits<double>::infinity());
  EXPECT_NE(error_of<ConfigError>(in).find("delay_s"), std::string::npos);
  in = paper("ring", 8);
  in.in.link.bandwidth_Bps = 0;
  EXPECT_NE(error_of<ConfigError>(in).find("bandwidth_Bps = 0"), std::string::npos);
  in = paper("ring", 8);
  in.in.link.latency_s = -3e-6;
  EXPECT_NE(error_of<ConfigError>(in).find("latency_s"), std::string::npos);
  in = paper("ring", 8);
  in.in.link.gamma_s_per_byte = -1;
  EXPECT_NE(error_of<ConfigError>(in).find("gamma_s_per_byte = -1"), std::string::npos);
  // StragglAR needs the schedule's round count where no closed form of it is known.
  EXPECT_NE(error_of<ScheduleError>(paper("stragglar", 6)).find("schedule_rounds"), std::string::npos);
  in = paper("stragglar", 8);
  in.in.schedule_rounds = 6 + 6;  // 6 completion rounds < n - 1
  EXPECT_NE(error_of<ScheduleError>(in).find("schedule_rounds = 12 leaves 6"), std::string::npos);
  in.in.schedule_rounds = 3;  // fewer than the ReduceScatter's n - 2
  EXPECT_NE(error_of<ScheduleError>(in).find("schedule_rounds = 3 leaves 0"), std::string::npos);
  // The double binary tree formula needs at least two chunks per tree.
  for (std::uint32_t chunks : {2u, 5u}) {
    in = paper("double_binary_tree", 8);
    in.in.pipeline_chunks = chunks;
    EXPECT_NE(error_of<ScheduleError>(in).find(fmt::format("pipeline_chunks = {}", chunks)), std::string::npos);
  }
  // The pipelined formulas take the schedule's depth; the default is the table's, not theirs.
  for (const std::string algo : {"binomial_tree", "double_binary_tree", "straggler_tree"}) {
    in = paper(algo, 8);
    in.in.pipeline_chunks = 0;
    EXPECT_NE(error_of<ConfigError>(in).find("pipeline_chunks = 0"), std::string::npos) << algo;
  }
}

}  // namespace
}  // namespace collsim
