// The baseline generators: correctness for every n, their round counts, straggler relabelling,
// and the closed forms of models/ against an exact dataflow evaluation of the generated schedules.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "collsim/algorithms/reference_executor.hpp"
#include "collsim/algorithms/registry.hpp"
#include "collsim/algorithms/verifier.hpp"
#include "collsim/models/closed_form.hpp"
#include "collsim/models/error.hpp"
#include "dataflow_timing.hpp"

namespace collsim {
namespace {

const std::vector<std::string> kBaselines{"recursive_halving_doubling", "recursive_halving_doubling_fold",
                                          "recursive_doubling", "binomial_tree", "double_binary_tree", "direct",
                                          "straggler_tree"};

std::vector<Rank> all_sizes() {
  std::vector<Rank> ns;
  for (Rank n = 2; n <= 64; ++n) ns.push_back(n);
  for (Rank n = 128; n <= 1024; n *= 2) ns.push_back(n);
  return ns;
}

std::uint32_t log2_floor(Rank n) { return static_cast<std::uint32_t>(std::bit_width(n)) - 1; }
std::uint32_t log2_ceil(Rank n) { return static_cast<std::uint32_t>(std::bit_width(n - 1)); }

TEST(Baselines, VerifiedAndCorrectForEveryN) {
  for (const std::string& algo : kBaselines) {
    for (Rank n : all_sizes()) {
      const Schedule s = generate_schedule(algo, AlgorithmOptions{n, {}, 0});
      ASSERT_EQ(s.n, n);
      ASSERT_EQ(s.ports, 1u) << algo << " n=" << n;
      const auto d = verify_schedule(s);
      ASSERT_TRUE(d.empty()) << algo << " n=" << n << ": " << format_diagnostic(s, d[0]);
      const auto ref = execute_reference(s, n <= 64 ? 2 : 1);
      ASSERT_TRUE(ref.correct) << algo << " n=" << n << ": " << ref.first_mismatch;
    }
  }
}

// The non-power-of-two cases of recursive halving/doubling depend on n - p relative to p/2 (plain
// pairs, triples, quads), so every n up to 300 is checked, not a sample.
TEST(Baselines, RecursiveHalvingDoublingVerifiedAndCorrectUpTo300) {
  for (const std::string algo : {"recursive_halving_doubling", "recursive_halving_doubling_fold"}) {
    for (Rank n = 2; n <= 300; ++n) {
      const Schedule s = generate_schedule(algo, AlgorithmOptions{n, {}, 0});
      const auto d = verify_schedule(s);
      ASSERT_TRUE(d.empty()) << algo << " n=" << n << ": " << format_diagnostic(s, d[0]);
      const auto ref = execute_reference(s, 1);
      ASSERT_TRUE(ref.correct) << algo << " n=" << n << ": " << ref.first_mismatch;
    }
  }
}

// n = 2^t g (g odd): the largest message of each reduce_scatter round halves from s/2, except
// at level t where the subgroups of g work alone: two rounds of s / 2^(t+1) (3-2 elimination)
// or, when g = 3 or 9, two rounds of s / (3 2^t) (and for g = 9 two of s / (9 2^t)) and nothing
// after. The all_gather mirrors it. The
// default straggler n-1 takes part in two transfers per even level and per core level; in the
// elimination in one exchange each way (a plain pair, when g - p' < p'/2) or, as the b of a
// triple, in none of the first round, two of the second and three on the way back; in radix-3
// levels in two transfers per round (8 in all for g = 3 and, with one level fewer of the
// hypercube count, for g = 9).
TEST(Baselines, ThreeTwoEliminationShape) {
  for (Rank n = 3; n <= 300; ++n) {
    const Rank p = std::bit_floor(n);
    if (n == p) continue;
    const auto t = static_cast<std::uint32_t>(std::countr_zero(n));
    const Rank g = n >> t;
    const std::uint32_t levels = log2_floor(n);
    std::vector<std::uint32_t> denominators;  // round r moves 1/denominators[r] of the buffer
    for (std::uint32_t k = 0; k < t; ++k) denominators.push_back(2u << k);
    for (std::uint32_t k = t; k < levels; ++k) {
      if (g == 3 || g == 9) {
        for (Rank third = 3; third <= g; third *= 3) denominators.insert(denominators.end(), 2, third << t);
        break;
      }
      denominators.push_back(2u << k);
      if (k == t) denominators.push_back(2u << k);
    }
    const Schedule s = generate_schedule("recursive_halving_doubling", AlgorithmOptions{n, {}, 0});
    ASSERT_EQ(s.phases.size(), 2u);
    for (std::size_t ph = 0; ph < 2; ++ph) {
      const Phase& phase = s.phases[ph];
      ASSERT_EQ(phase.num_rounds(), denominators.size()) << "n=" << n;
      for (std::size_t r = 0; r < phase.num_rounds(); ++r) {
        std::uint32_t largest = 0;
        for (const Transfer& x : phase.round(r)) largest = std::max<std::uint32_t>(largest, x.chunk_count);
        const std::size_t level = ph == 0 ? r : denominators.size() - 1 - r;
        EXPECT_EQ(largest * denominators[level], s.num_chunks) << "n=" << n << " phase " << ph << " round " << r;
      }
    }
    std::size_t straggler_transfers = 0;
    for (const Phase& phase : s.phases) {
      for (const Transfer& x : phase.transfers()) straggler_transfers += x.src == n - 1 || x.dst == n - 1;
    }
    const Rank p_sub = p >> t;
    const Rank extra_sub = g - p_sub;
    const bool radix3 = g == 3 || g == 9;
    const std::size_t in_subgroup = radix3 ? 8u : extra_sub < p_sub / 2 ? 4u : 5u;
    EXPECT_EQ(straggler_transfers, 4 * (levels - 1) + in_subgroup) << "n=" << n;
    if (!radix3 && extra_sub >= p_sub / 2) {
      for (const Transfer& x : s.phases[0].round(t)) {
        EXPECT_TRUE(x.src != n - 1 && x.dst != n - 1) << "n=" << n << ": the straggler is busy in round " << t;
      }
    }
  }
  const Schedule fold = generate_schedule("recursive_halving_doubling_fold", AlgorithmOptions{6, {}, 0});
  EXPECT_EQ(fold.phases[0].round(0)[0].chunk_count, fold.num_chunks);
}

TEST(Baselines, TreesAreCorrectForOtherPipelineDepths) {
  for (const std::string algo : {"binomial_tree", "double_binary_tree", "straggler_tree"}) {
    for (std::uint32_t chunks : {1u, 2u, 3u, 4u, 6u, 16u}) {
      if (algo == "double_binary_tree" && chunks % 2 != 0) continue;
      for (Rank n : {2u, 3u, 5u, 8u, 13u, 33u}) {
        const Schedule s = generate_schedule(algo, AlgorithmOptions{n, {}, chunks});
        ASSERT_EQ(s.num_chunks, chunks) << algo;
        const auto d = verify_schedule(s);
        ASSERT_TRUE(d.empty()) << algo << " n=" << n << " C=" << chunks << ": " << format_diagnostic(s, d[0]);
        ASSERT_TRUE(execute_reference(s, 1).correct) << algo << " n=" << n << " C=" << chunks;
      }
    }
  }
}

TEST(Baselines, DoubleBinaryTreeRejectsAnOddPipelineDepth) {
  try {
    (void)generate_schedule("double_binary_tree", AlgorithmOptions{8, {}, 5});
    FAIL() << "expected ScheduleError";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("pipeline_chunks = 5"), std::string::npos) << e.what();
  }
}

TEST(Baselines, RoundCounts) {
  for (Rank n : all_sizes()) {
    const Rank p = std::bit_floor(n);
    const std::uint32_t fold = n == p ? 0 : 2;
    for (const std::string algo : {"recursive_halving_doubling", "recursive_halving_doubling_fold"}) {
      const Schedule rhd = generate_schedule(algo, AlgorithmOptions{n, {}, 0});
      EXPECT_EQ(rhd.num_rounds(), 2 * log2_floor(n) + fold) << algo << " " << n;
      // Subgroups of three split their window in thirds (recursive_halving_doubling.cpp).
      const Rank g = n >> std::countr_zero(n);
      const bool thirds = algo == "recursive_halving_doubling" && (g == 3 || g == 9);
      EXPECT_EQ(rhd.num_chunks, thirds ? n : p) << algo;
    }
    const Schedule rd = generate_schedule("recursive_doubling", AlgorithmOptions{n, {}, 0});
    EXPECT_EQ(rd.num_rounds(), log2_floor(n) + fold) << n;
    EXPECT_EQ(rd.num_chunks, 1u);
    const Schedule direct = generate_schedule("direct", AlgorithmOptions{n, {}, 0});
    EXPECT_EQ(direct.num_rounds(), 2 * (n - 2) + log2_ceil(n)) << n;
    EXPECT_EQ(direct.num_chunks, n - 1);
    if (n == p) {
      // Binomial tree: C + 1 full periods of log2 n rounds, then a drain of L (L - 1) / 2 rounds.
      const std::uint32_t levels = log2_floor(n);
      const Schedule bt = generate_schedule("binomial_tree", AlgorithmOptions{n, {}, 0});
      const std::uint32_t chunks = find_algorithm("binomial_tree").default_pipeline_chunks;
      EXPECT_EQ(bt.num_rounds(), (chunks + 1) * levels + levels * (levels - 1) / 2) << n;
    }
  }
  // Hand-counted: straggler_tree n = 8 (ready heap of 7, depth 2): the reduce uses left children
  // in periods 0..8 and right children in periods 0..8, the join 2C rounds plus one drain period.
  EXPECT_EQ(generate_schedule("straggler_tree", AlgorithmOptions{8, {}, 8}).num_rounds(), 18u + 18u);
  EXPECT_EQ(generate_schedule("straggler_tree", AlgorithmOptions{2, {}, 8}).num_rounds(), 8u);
  // Double binary tree n = 8, 4 chunks per tree: 22 rounds, and n = 2: two rounds per chunk.
  EXPECT_EQ(generate_schedule("double_binary_tree", AlgorithmOptions{8, {}, 8}).num_rounds(), 22u);
  EXPECT_EQ(generate_schedule("double_binary_tree", AlgorithmOptions{2, {}, 8}).num_rounds(), 8u);
}

TEST(Baselines, FoldKeepsTheStragglerOutOfTheFold) {
  // n = 6: ranks 0 and 2 fold into 1 and 3; rank 5 (the default straggler) is a core rank.
  const Schedule s = generate_schedule("recursive_halving_doubling_fold", AlgorithmOptions{6, {}, 0});
  const auto fold = s.phases[0].round(0);
  ASSERT_EQ(fold.size(), 2u);
  for (const Transfer& t : fold) {
    EXPECT_NE(t.src, 5u);
    EXPECT_NE(t.dst, 5u);
    EXPECT_EQ(t.chunk_count, s.num_chunks);
  }
  EXPECT_EQ(s.phases.back().name(), "unfold");
}

bool takes_part(const Phase& phase, Rank n, Rank rank) {
  for (Rank r : participants(phase, n)) {
    if (r == rank) return true;
  }
  return false;
}

TEST(Baselines, StragglerRelabelling) {
  for (Rank n : {2u, 3u, 7u, 8u, 12u}) {
    for (Rank straggler : {Rank{0}, n / 2, n - 1}) {
      for (const std::string& algo : kBaselines) {
        const Schedule s = generate_schedule(algo, AlgorithmOptions{n, straggler, 0});
        const auto d = verify_schedule(s);
        ASSERT_TRUE(d.empty()) << algo << " n=" << n << " S=" << straggler << ": " << format_diagnostic(s, d[0]);
        ASSERT_TRUE(execute_reference(s, 1).correct) << algo << " n=" << n << " S=" << straggler;
        const bool aware = find_algorithm(algo).straggler_aware;
        EXPECT_EQ(s.straggler, aware ? static_cast<std::int64_t>(straggler) : -1) << algo;
        if (!aware) continue;
        // The straggler only shows up after the ready ranks' first phase (for n >= 3; at n = 2
        // both algorithms are a bare exchange).
        if (n < 3) continue;
        EXPECT_FALSE(takes_part(s.phases.front(), n, straggler)) << algo << " n=" << n << " S=" << straggler;
        if (straggler != n - 1) {
          EXPECT_TRUE(takes_part(s.phases.front(), n, n - 1)) << algo;
        }
        EXPECT_TRUE(takes_part(s.phases[1], n, straggler)) << algo << " n=" << n << " S=" << straggler;
      }
    }
  }
  // Oblivious algorithms ignore the straggler option entirely.
  const Schedule a = generate_schedule("binomial_tree", AlgorithmOptions{9, Rank{3}, 0});
  const Schedule b = generate_schedule("binomial_tree", AlgorithmOptions{9, {}, 0});
  ASSERT_EQ(a.num_transfers(), b.num_transfers());
  for (std::size_t i = 0; i < a.phases[0].num_transfers(); ++i) {
    EXPECT_EQ(a.phases[0].transfers()[i].src, b.phases[0].transfers()[i].src);
    EXPECT_EQ(a.phases[0].transfers()[i].dst, b.phases[0].transfers()[i].dst);
  }
}

// The closed form of every algorithm (stragglar included once it is generated) equals the exact
// dataflow time of the schedule the generator builds, in both start modes, with and without
// reduction cost, for delays that are hidden, partly hidden and dominant; and its round count is
// the schedule's.
TEST(Baselines, ClosedFormsMatchTheGeneratedSchedules) {
  std::vector<Rank> ns;
  for (Rank n = 2; n <= 40; ++n) ns.push_back(n);
  for (Rank n : {63u, 64u, 65u, 96u, 127u, 128u, 200u, 256u}) ns.push_back(n);
  int compared = 0;
  for (const auto& info : all_algorithms()) {
    const std::string algo(info.name);
    if (info.hierarchical) continue;  // closed forms on clusters: tests/sim/hierarchical_closed_form_test.cpp
    ASSERT_TRUE(info.has_closed_form()) << algo;
    const bool pipelined = info.default_pipeline_chunks > 0;
    for (std::uint32_t chunks : pipelined ? std::vector<std::uint32_t>{0, 4, 6} : std::vector<std::uint32_t>{0}) {
      for (Rank n : ns) {
        Schedule s;
        try {
          s = generate_schedule(algo, AlgorithmOptions{n, {}, chunks});
        } catch (const ScheduleError&) {
          continue;  // an n (or a whole algorithm) not generated yet is covered by its own tests
        }
        ClosedFormInput in;
        in.n = n;
        in.size_bytes = 3.0 * (1 << 27);
        in.pipeline_chunks = pipelined ? s.num_chunks : 0;
        in.schedule_rounds = static_cast<std::uint32_t>(s.num_rounds());
        for (double gamma : {0.0, 2e-9}) {
          in.link = LinkModel{3e-6, 450.0 * 1024 * 1024 * 1024, gamma};
          for (double delay : {0.0, 7e-6, 2e-4, 5e-2}) {
            in.delay_s = delay;
            for (StartMode mode : {StartMode::Barrier, StartMode::Eager}) {
              in.start = mode;
              const ClosedFormResult f = info.closed_form(in);
              const double exact =
                  testing::dataflow_time(s, in.size_bytes, in.link, mode, testing::one_late(n, n - 1, delay));
              ASSERT_NEAR(f.time_s, exact, 1e-9 * exact)
                  << algo << " n=" << n << " C=" << s.num_chunks << " gamma=" << gamma << " d=" << delay << " "
                  << start_mode_name(mode);
              ASSERT_EQ(f.rounds, s.num_rounds()) << algo << " n=" << n;
              ++compared;
            }
          }
          in.delay_s = 0;
          const double no_delay = testing::dataflow_time(s, in.size_bytes, in.link, StartMode::Eager,
                                                         std::vector<double>(n, 0.0));
          ASSERT_NEAR(info.closed_form(in).collective_s, no_delay, 1e-9 * no_delay) << algo << " n=" << n;
        }
      }
    }
  }
  EXPECT_GT(compared, 10000);
}

// The double binary tree's formula is stated rather than proved (see closed_form.cpp), so it is
// checked for every heap shape up to n = 300: its chain depends on how full the last level is.
TEST(Baselines, DoubleBinaryTreeFormulaForEveryHeapShape) {
  for (std::uint32_t chunks : {4u, 6u, 8u}) {
    for (Rank n = 2; n <= 300; ++n) {
      const Schedule s = generate_schedule("double_binary_tree", AlgorithmOptions{n, {}, chunks});
      ClosedFormInput in;
      in.n = n;
      in.size_bytes = 1 << 20;
      in.pipeline_chunks = chunks;
      in.link = LinkModel{1e-6, 1e11, 3e-11};
      for (double delay : {0.0, 1.0}) {
        in.delay_s = delay;
        for (StartMode mode : {StartMode::Barrier, StartMode::Eager}) {
          in.start = mode;
          const double exact =
              testing::dataflow_time(s, in.size_bytes, in.link, mode, testing::one_late(n, n - 1, delay));
          ASSERT_NEAR(double_binary_tree_closed_form(in).time_s, exact, 1e-9 * exact)
              << "n=" << n << " C=" << chunks << " d=" << delay << " " << start_mode_name(mode);
        }
      }
      ASSERT_EQ(double_binary_tree_closed_form(in).rounds, s.num_rounds()) << "n=" << n << " C=" << chunks;
    }
  }
}

// The table's straggler_aware fact for the rows the paper builds around the straggler: the
// sweep and the runner reuse one schedule for every late rank of a row that is not aware, so a
// row wrongly marked oblivious would run a schedule that waits for the wrong rank. Checked
// against the generators, not the table, for a straggler other than n-1.
TEST(Baselines, StragglerAwareRowsLeaveTheRequestedStragglerOutOfTheFirstPhase) {
  for (const char* algo : {"direct", "straggler_tree"}) {
    const AlgorithmInfo& info = find_algorithm(algo);
    EXPECT_TRUE(info.schedule_depends_on_straggler()) << algo;
    const Schedule s = generate_schedule(algo, AlgorithmOptions{7, Rank{2}, 0});
    EXPECT_EQ(s.straggler, 2) << algo;
    EXPECT_FALSE(takes_part(s.phases.front(), 7, 2)) << algo;
  }
}

}  // namespace
}  // namespace collsim
