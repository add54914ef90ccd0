// Closed forms of every algorithm, derived from the dependency structure of its generated
// schedule (see the header for the timing model). Notation in the comments: s = size, C =
// pipeline chunks, m = bytes per chunk, red(m) = alpha + m (beta + gamma) = what a reducing
// receiver spends on an m-byte message, cp(m) = alpha + m beta = what a sender or a copying
// receiver spends. A schedule's time with every rank arriving together is its longest chain of
// transfers in which consecutive transfers share a rank, weighted by that rank's cost; for the
// symmetric algorithms every round costs the same everywhere and the chain is every round.
#include "collsim/models/closed_form.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <string_view>
#include <vector>

#include "collsim/models/error.hpp"

namespace collsim {
namespace {

struct Cost {
  double alpha, beta, gamma;
  double red(double bytes) const { return alpha + bytes * beta + bytes * gamma; }
  double cp(double bytes) const { return alpha + bytes * beta; }
};

std::uint32_t ceil_log2(std::uint32_t n) { return static_cast<std::uint32_t>(std::bit_width(n - 1)); }

// One algorithm's answer: its time with no delay, with the delay, and its schedule's rounds.
struct Timing {
  double collective = 0;
  double time = 0;
  std::uint32_t rounds = 0;
};

// Symmetric schedules: every phase includes the straggler and every rank is tied to every other
// within the first few rounds, so a late rank delays everything by exactly d in both modes.
Timing ring(std::uint32_t n, double s, double d, const Cost& c) {
  const double m = s / n;
  const double t0 = (n - 1) * c.red(m) + (n - 1) * c.cp(m);
  return {t0, d + t0, 2 * (n - 1)};
}

// The power-of-two core (algorithms/src/hypercube_rounds.hpp) from halving level first_level
// on, and back: level k halves a window of s / 2^k, so both of its rounds move s / 2^(k+1).
double hypercube_s(std::uint32_t p, double s, std::uint32_t first_level, const Cost& c) {
  const auto levels = static_cast<std::uint32_t>(std::countr_zero(p));
  double t = 0;
  for (std::uint32_t k = first_level; k < levels; ++k) {
    const double m = s / static_cast<double>(2u << k);
    t += c.red(m) + c.cp(m);
  }
  return t;
}

// Recursive halving/doubling (algorithms/src/recursive_halving_doubling.cpp), n = 2^t g with g
// odd. For g = 3 or 9, t even levels and then radix-3 levels of two dissemination rounds.
// Otherwise 3-2 elimination: for n != p, halving level t (messages m = s / 2^(t+1)) takes two rounds of reductions and doubling
// level t two rounds of copies, every other level one round as in the hypercube. The t levels
// before it pair all ranks evenly; in the elimination every group with an extra rank keeps its
// core a busy in both rounds, and the later levels tie every core rank of a half window to
// every other, so the triples set the pace. The straggler n-1, and the 2^t - 1 ranks the even
// levels make wait for it, are the b of a plain pair or a triple: first needed in the second
// elimination round, so in eager mode one elimination message of the delay is hidden.
Timing recursive_halving_doubling(std::uint32_t n, double s, double d, StartMode start, const Cost& c) {
  const std::uint32_t p = std::bit_floor(n);
  const std::uint32_t levels = static_cast<std::uint32_t>(std::countr_zero(p));
  if (n == p) {
    const double t0 = hypercube_s(p, s, 0, c);
    return {t0, d + t0, 2 * levels};
  }
  const auto t = static_cast<std::uint32_t>(std::countr_zero(n));
  const std::uint32_t g = n >> t;
  if (g == 3 || g == 9) {
    // Radix-3 levels: two rounds of a third of the current window each way per level, every
    // member busy in every round, so a late rank delays its subgroup, and through the even
    // levels everyone.
    double t0 = hypercube_s(1u << t, s, 0, c);
    for (std::uint32_t third = 3; third <= g; third *= 3) {
      const double m = s / static_cast<double>(third << t);
      t0 += 2 * c.red(m) + 2 * c.cp(m);
    }
    return {t0, d + t0, 2 * levels + 2};
  }
  const double m = s / static_cast<double>(2u << t);
  const double eliminate = c.red(m);
  const double t0 = hypercube_s(p, s, 0, c) + eliminate + c.cp(m);
  const double time = start == StartMode::Eager ? t0 - eliminate + std::max(d, eliminate) : d + t0;
  return {t0, time, 2 * levels + 2};
}

// MPICH fold (algorithms/src/power_of_two_fold.hpp): the straggler n-1 is a core rank that does
// not fold, so in eager mode its delay overlaps the fold round; the hypercube rounds then tie
// every core rank to every other, so all finish together.
Timing recursive_halving_doubling_fold(std::uint32_t n, double s, double d, StartMode start, const Cost& c) {
  const std::uint32_t p = std::bit_floor(n);
  const std::uint32_t levels = static_cast<std::uint32_t>(std::countr_zero(p));
  const bool folds = p != n;
  const double fold_in = folds ? c.red(s) : 0.0;
  const double fold_out = folds ? c.cp(s) : 0.0;
  const double hypercube = hypercube_s(p, s, 0, c);
  const double t0 = fold_in + hypercube + fold_out;
  const double time = start == StartMode::Barrier ? d + t0 : std::max(d, fold_in) + hypercube + fold_out;
  return {t0, time, 2 * levels + (folds ? 2u : 0u)};
}

Timing recursive_doubling(std::uint32_t n, double s, double d, StartMode start, const Cost& c) {
  const std::uint32_t p = std::bit_floor(n);
  const std::uint32_t levels = static_cast<std::uint32_t>(std::countr_zero(p));
  const bool folds = p != n;
  const double fold_in = folds ? c.red(s) : 0.0;
  const double fold_out = folds ? c.cp(s) : 0.0;
  const double exchange = levels * c.red(s);
  const double t0 = fold_in + exchange + fold_out;
  const double time = start == StartMode::Barrier ? d + t0 : std::max(d, fold_in) + exchange + fold_out;
  return {t0, time, levels + (folds ? 2u : 0u)};
}

// Ring AllReduce among the n-1 ready ranks (never waits for the straggler, in either mode), then
// the exchange with the straggler, then ceil(log2 n) - 1 doubling rounds of the whole buffer.
Timing direct(std::uint32_t n, double s, double d, const Cost& c) {
  const double m = s / (n - 1);
  const double ready = (n - 2) * (c.red(m) + c.cp(m));
  const std::uint32_t bcast = ceil_log2(n) - 1;
  const double after = c.red(s) + bcast * c.cp(s);
  return {ready + after, std::max(d, ready) + after, 2 * (n - 2) + 1 + bcast};
}

// Longest broadcast drain, in rounds, below a binomial subtree of q ranks whose root has just
// received the last chunk (algorithms/src/binomial_tree.cpp): the subtree root sends to its
// children j = 0, 1, ... in rounds j of the next period, and the chain may follow child j after
// j + 1 rounds. Children j below the last are full subtrees of 2^j ranks (drain j (j+1) / 2);
// the last one holds the rest. For the whole tree (q = n) this includes the root's own period.
std::uint32_t binomial_drain(std::uint32_t q) {
  if (q <= 1) return 0;
  const std::uint32_t m = ceil_log2(q);
  return std::max((m - 1) * m / 2, m + binomial_drain(q - (1u << (m - 1))));
}

// Rounds of the binomial schedule: C + 1 full periods of L rounds (the root works in all of
// them), then in period C + k only rounds 0..E-1, E = most children of a rank whose depth is in
// [k, k + C - 1] (the ranks still forwarding some chunk then).
std::uint32_t binomial_rounds(std::uint32_t n, std::uint32_t chunks) {
  const std::uint32_t levels = ceil_log2(n);
  std::vector<std::uint32_t> most_children(levels + 1, 0);  // by depth
  for (std::uint32_t v = 1; v < n; ++v) {
    std::uint32_t children = 0;
    for (std::uint32_t j = 0; j < static_cast<std::uint32_t>(std::countr_zero(v)) && v + (1u << j) < n; ++j) ++children;
    const auto depth = static_cast<std::uint32_t>(std::popcount(v));
    most_children[depth] = std::max(most_children[depth], children);
  }
  std::uint32_t rounds = (chunks + 1) * levels;
  for (std::uint32_t k = 1; k <= levels; ++k) {
    std::uint32_t e = 0;
    for (std::uint32_t depth = k; depth <= levels && depth < k + chunks; ++depth) e = std::max(e, most_children[depth]);
    rounds += e;
  }
  return rounds;
}

// The root receives in every round of periods 0..C-1 (C L reduce rounds) and sends in every
// round of period C; the drain below it is binomial_drain(n) rounds including that period.
// Eager: the straggler n-1 is the last leaf; its first message climbs popcount(n-1) levels in
// period 0 and reaches the root in that period's last round, so the L - popcount(n-1) earlier
// root rounds of period 0 are hidden under the delay.
Timing binomial_tree(std::uint32_t n, double s, double d, StartMode start, std::uint32_t chunks, const Cost& c) {
  const std::uint32_t levels = ceil_log2(n);
  const double m = s / chunks;
  const double t0 = chunks * levels * c.red(m) + binomial_drain(n) * c.cp(m);
  const std::uint32_t hidden = levels - static_cast<std::uint32_t>(std::popcount(n - 1));
  const double time = start == StartMode::Barrier ? d + t0 : std::max(t0, d + t0 - hidden * c.red(m));
  return {t0, time, binomial_rounds(n, chunks)};
}

std::uint32_t heap_depth(std::uint32_t p) { return static_cast<std::uint32_t>(std::bit_width(p + 1)) - 1; }

// Straggler tree (algorithms/src/straggler_tree.cpp) over N = n-1 ready ranks in heap order.
// Reduce phase: a chain along the leftmost heap path meets a reducing receiver in every
// non-empty round, so it lasts (rounds) * red(m). Rounds: left children send in periods
// 0..C+D-2 (D = depth of the last ready rank), right children in periods D-Dr..C+D-2 (Dr =
// depth of the deepest right child).
std::uint32_t straggler_tree_reduce_rounds(std::uint32_t ready, std::uint32_t chunks) {
  if (ready < 2) return 0;
  const std::uint32_t deepest = heap_depth(ready - 1);
  const std::uint32_t last_right = (ready - 1) % 2 == 0 ? ready - 1 : ready - 2;  // largest even position
  const std::uint32_t right_depth = last_right >= 2 ? heap_depth(last_right) : 0;
  return (chunks + deepest - 1) + (right_depth >= 1 ? chunks + right_depth - 1 : 0);
}

// Broadcast drain below heap position p after it received the last chunk, in rounds. p sends to
// its left child in round 0 and its right child in round 1 of the next period, so the chain may
// follow the left child after one round or the right child after two; a rank that received in
// round 0 still sends the previous chunk (if C > 1) to its right child in round 1 of that period.
std::uint32_t heap_drain(std::uint32_t p, std::uint32_t ready, bool received_in_round_0, bool previous_chunk) {
  const std::uint32_t left = 2 * p + 1;
  if (left >= ready) return 0;
  const bool has_right = left + 1 < ready;
  const std::uint32_t pending = received_in_round_0 && has_right && previous_chunk ? 1 : 0;
  std::uint32_t best = pending + 1 + heap_drain(left, ready, true, previous_chunk);
  if (has_right) best = std::max(best, pending + 2 + heap_drain(left + 1, ready, false, previous_chunk));
  return best;
}

// Join + broadcast phase: C periods in which rank 0 and the straggler work in both rounds (the
// exchange, a reduce, then one broadcast send each), then the drain of the deeper half.
// Its rounds: 2C, plus one round per period in which some rank at depth >= 1 still forwards to a
// left (right) child: the depth of the deepest such rank.
Timing straggler_tree(std::uint32_t n, double s, double d, std::uint32_t chunks, const Cost& c) {
  const std::uint32_t ready = n - 1;
  const double m = s / chunks;
  const std::uint32_t reduce_rounds = straggler_tree_reduce_rounds(ready, chunks);
  const double reduce = reduce_rounds * c.red(m);
  double join = chunks * c.red(m);
  std::uint32_t join_rounds = chunks;
  if (ready >= 2) {
    const std::uint32_t drain = std::max(heap_drain(1, ready, false, chunks > 1), ready >= 3 ? heap_drain(2, ready, false, chunks > 1) : 0u);
    join += chunks * c.cp(m) + drain * c.cp(m);
    std::uint32_t left_depth = 0;
    std::uint32_t right_depth = 0;
    for (std::uint32_t p = 1; 2 * p + 1 < ready; ++p) {
      left_depth = std::max(left_depth, heap_depth(p));
      if (2 * p + 2 < ready) right_depth = std::max(right_depth, heap_depth(p));
    }
    join_rounds = 2 * chunks + left_depth + right_depth;
  }
  return {reduce + join, std::max(d, reduce) + join, reduce_rounds + join_rounds};
}

// Rounds of the double binary tree schedule (algorithms/src/double_binary_tree.cpp): round
// (period P, slot u) exists when an edge of colour u is active in P, going up (slots 0, 1; the
// edge above position p carries chunks in periods h(p) .. h(p) + C - 1) or down (slots 2, 3;
// periods H - 1 + depth(parent) + 0 .. C - 1).
std::uint32_t double_binary_tree_rounds(std::uint32_t n, std::uint32_t chunks) {
  auto height = [n](std::uint32_t p) {
    std::uint32_t h = 0;
    for (std::uint64_t q = p; 2 * q + 1 < n; q = 2 * q + 1) ++h;
    return h;
  };
  const std::uint32_t root_height = height(0);
  // starts[slot][o]: some edge used in that slot carries its first chunk in period o.
  std::vector<std::vector<bool>> starts(4, std::vector<bool>(2 * root_height + 2, false));
  for (int tree = 0; tree < 2; ++tree) {
    for (std::uint32_t p = 1; p < n; ++p) {
      const std::uint32_t colour = tree == 0 ? (p % 2 == 1 ? 0u : 1u) : ((n - 1 - p) % 2 == 1 ? 1u : 0u);
      starts[colour][height(p)] = true;
      starts[2 + colour][root_height - 1 + heap_depth((p - 1) / 2)] = true;
    }
  }
  std::uint32_t rounds = 0;
  for (const auto& slot : starts) {
    std::uint32_t covered_until = 0;  // periods [0, covered_until) already counted
    for (std::uint32_t o = 0; o < slot.size(); ++o) {
      if (!slot[o]) continue;
      const std::uint32_t begin = std::max(o, covered_until);
      if (o + chunks > begin) rounds += o + chunks - begin;
      covered_until = std::max(covered_until, o + chunks);
    }
  }
  return rounds;
}

// Double binary tree, C = pipeline_chunks / 2 chunks of m = s / (2C) per tree, H = floor(log2 n)
// the height of both heaps. Structure of the critical chain: the reduce fills up the heap (two
// rounds per level, H - 1 levels), then both roots and every full inner rank work in all four
// rounds of the C periods in which chunks pass the roots, then the broadcast drains (two rounds
// per level). The last heap level is full (n >= 1.5 * 2^H) or partly missing, which removes
// rounds at the ends of the fill and the drain. The chain wanders between the two trees, so
// the counts below are stated for this schedule's structure rather than proved in general. They
// were checked against an exact dataflow evaluation of the schedule for every n <= 1100 and 46
// larger n up to 4097 (C = 2, 4, 7, with and without gamma, both modes) and every n <= 300 with
// C = 2..12; tests/algorithms/baselines_test.cpp repeats every n <= 300 for C = 2, 3, 4.
// C = 1 is not covered (no pipelining, a different chain) and n = 2 is a plain swap.
//   chain rounds  4C + 4H - 6 + (0 if n = 2^H, 1 if n < 1.5 * 2^H, else 2)
//   of which reduce rounds  2C + 2H - 3 + (1 if n >= 1.5 * 2^H)
// Eager: the straggler n-1 is the root of tree B and the last leaf of tree A; when n >= 6 and n
// is not a multiple of 4 the chain from its first message misses one reduce round, which the
// delay hides.
Timing double_binary_tree(std::uint32_t n, double s, double d, StartMode start, std::uint32_t total_chunks,
                          const Cost& c) {
  if (total_chunks % 2 != 0 || total_chunks < 4) {
    throw ScheduleError(fmt::format(
        "double_binary_tree: no closed form for pipeline_chunks = {} (needs an even number >= 4, at least two "
        "chunks per tree)", total_chunks));
  }
  const std::uint32_t chunks = total_chunks / 2;
  const double m = s / total_chunks;
  std::uint32_t chain = 2 * chunks;
  std::uint32_t reduces = chunks;
  if (n >= 3) {
    const std::uint32_t h = static_cast<std::uint32_t>(std::bit_width(n)) - 1;
    const std::uint32_t p = 1u << h;
    const bool full_last_level = n >= p + p / 2;
    chain = 4 * chunks + 4 * h - 6 + (n == p ? 0 : full_last_level ? 2 : 1);
    reduces = 2 * chunks + 2 * h - 3 + (full_last_level ? 1 : 0);
  }
  const double t0 = reduces * c.red(m) + (chain - reduces) * c.cp(m);
  const bool hides_one = n >= 6 && n % 4 != 0;
  const double time = start == StartMode::Barrier ? d + t0 : std::max(t0, d + t0 - (hides_one ? c.red(m) : 0.0));
  return {t0, time, double_binary_tree_rounds(n, chunks)};
}


// StragglAR: ring ReduceScatter among the n-1 ready ranks (never waits for the straggler), then
// R completion rounds after the straggler arrives. Exact when, as in the published construction,
// the straggler takes part in every completion round and the only reductions are its n-1
// exchanges (one per round): then the straggler's own chain is the longest.
// Phase 1 of every stragglar schedule is the n - 2 rounds of that ReduceScatter, so the
// schedule's total round count gives R.
Timing stragglar(std::uint32_t n, double s, double d, std::uint32_t schedule_rounds, const Cost& c) {
  std::uint32_t r = 0;
  if (schedule_rounds == 0) {
    if (!std::has_single_bit(n)) {
      throw ScheduleError(fmt::format(
          "stragglar: n = {} is not a power of two, so the number of completion rounds is not known in closed form; "
          "pass schedule_rounds (the round count of the schedule in use)", n));
    }
    r = n - 2 + static_cast<std::uint32_t>(std::countr_zero(n));
  } else if (schedule_rounds >= n - 2) {
    r = schedule_rounds - (n - 2);
  }
  if (r < n - 1) {
    throw ScheduleError(fmt::format(
        "stragglar: schedule_rounds = {} leaves {} completion rounds, below n - 1 = {} (every ready rank must "
        "exchange with the straggler)", schedule_rounds, r, n - 1));
  }
  const double m = s / (n - 1);
  const double rs = (n - 2) * c.red(m);
  const double completion = (n - 1) * c.red(m) + (r - (n - 1)) * c.cp(m);
  return {rs + completion, std::max(d, rs) + completion, n - 2 + r};
}

// NVLS (algorithms/src/nvls.cpp): every round has each GPU send one chunk up to the switch and
// receive one down, each over one NVLink direction only (alpha/2 + m beta / efficiency, the
// switch's reduce-and-multicast efficiency). The switch enters
// round k+1 when every GPU's round-k contribution has arrived, so after round 0 (which ends d +
// t for a late rank, t for the others) every transfer starts when the switch does: each round
// adds exactly t, in both start modes (barrier holds the one phase until d; eager gets there
// through the switch). No gamma: the switch adds at line rate and the GPUs only copy.
Timing nvls(double s, double d, std::uint32_t chunks, double efficiency, const Cost& c) {
  const double t = c.alpha / 2 + (s / chunks) * c.beta / efficiency;
  const double t0 = (chunks + 1) * t;
  return {t0, d + t0, chunks + 1};
}

void validate(const ClosedFormInput& in) {
  if (in.n < 2) throw ConfigError(fmt::format("closed form: n = {} (an AllReduce needs at least 2 ranks)", in.n));
  if (!(in.switch_efficiency > 0 && in.switch_efficiency <= 1)) {
    throw ConfigError(fmt::format("closed form: switch_efficiency = {} (must be in (0, 1])", in.switch_efficiency));
  }
  if (!(in.size_bytes >= 0) || !std::isfinite(in.size_bytes)) {
    throw ConfigError(fmt::format("closed form: size_bytes = {} (must be finite and >= 0)", in.size_bytes));
  }
  if (!(in.delay_s >= 0) || !std::isfinite(in.delay_s)) {
    throw ConfigError(fmt::format("closed form: delay_s = {} (must be finite and >= 0)", in.delay_s));
  }
  if (!(in.link.latency_s >= 0) || !std::isfinite(in.link.latency_s)) {
    throw ConfigError(fmt::format("closed form: latency_s = {} (must be finite and >= 0)", in.link.latency_s));
  }
  if (!(in.link.bandwidth_Bps > 0)) {
    throw ConfigError(fmt::format("closed form: bandwidth_Bps = {} (must be > 0)", in.link.bandwidth_Bps));
  }
  if (!(in.link.gamma_s_per_byte >= 0) || !std::isfinite(in.link.gamma_s_per_byte)) {
    throw ConfigError(fmt::format("closed form: gamma_s_per_byte = {} (must be finite and >= 0)",
                                  in.link.gamma_s_per_byte));
  }
}

// The pipelined formulas take the depth of the schedule in use; its default is a fact of the
// algorithm table, so a 0 here is a caller's mistake rather than a request for a default.
std::uint32_t pipeline_chunks(const ClosedFormInput& in, std::string_view algorithm) {
  if (in.pipeline_chunks == 0) {
    throw ConfigError(fmt::format("closed form of {}: pipeline_chunks = 0 (pass the schedule's pipeline depth, >= 1)",
                                  algorithm));
  }
  return in.pipeline_chunks;
}

// Validates the input, evaluates one formula on (n, s, d, cost) and packs the answer.
template <typename Formula>
ClosedFormResult evaluate(const ClosedFormInput& in, Formula formula) {
  validate(in);
  const Cost c{in.link.latency_s, 1.0 / in.link.bandwidth_Bps, in.link.gamma_s_per_byte};
  const Timing t = formula(in.n, in.size_bytes, in.delay_s, c);
  ClosedFormResult result;
  result.time_s = t.time;
  result.time_after_last_arrival_s = t.time - in.delay_s;
  result.collective_s = t.collective;
  result.rounds = t.rounds;
  return result;
}

}  // namespace

ClosedFormResult ring_closed_form(const ClosedFormInput& in) {
  return evaluate(in, [](std::uint32_t n, double s, double d, const Cost& c) { return ring(n, s, d, c); });
}

ClosedFormResult recursive_halving_doubling_closed_form(const ClosedFormInput& in) {
  return evaluate(in, [&](std::uint32_t n, double s, double d, const Cost& c) {
    return recursive_halving_doubling(n, s, d, in.start, c);
  });
}

ClosedFormResult recursive_halving_doubling_fold_closed_form(const ClosedFormInput& in) {
  return evaluate(in, [&](std::uint32_t n, double s, double d, const Cost& c) {
    return recursive_halving_doubling_fold(n, s, d, in.start, c);
  });
}

ClosedFormResult recursive_doubling_closed_form(const ClosedFormInput& in) {
  return evaluate(in, [&](std::uint32_t n, double s, double d, const Cost& c) {
    return recursive_doubling(n, s, d, in.start, c);
  });
}

ClosedFormResult direct_closed_form(const ClosedFormInput& in) {
  return evaluate(in, [](std::uint32_t n, double s, double d, const Cost& c) { return direct(n, s, d, c); });
}

ClosedFormResult binomial_tree_closed_form(const ClosedFormInput& in) {
  const std::uint32_t chunks = pipeline_chunks(in, "binomial_tree");
  return evaluate(in, [&](std::uint32_t n, double s, double d, const Cost& c) {
    return binomial_tree(n, s, d, in.start, chunks, c);
  });
}

ClosedFormResult straggler_tree_closed_form(const ClosedFormInput& in) {
  const std::uint32_t chunks = pipeline_chunks(in, "straggler_tree");
  return evaluate(in, [&](std::uint32_t n, double s, double d, const Cost& c) {
    return straggler_tree(n, s, d, chunks, c);
  });
}

ClosedFormResult double_binary_tree_closed_form(const ClosedFormInput& in) {
  const std::uint32_t chunks = pipeline_chunks(in, "double_binary_tree");
  return evaluate(in, [&](std::uint32_t n, double s, double d, const Cost& c) {
    return double_binary_tree(n, s, d, in.start, chunks, c);
  });
}

ClosedFormResult nvls_closed_form(const ClosedFormInput& in) {
  const std::uint32_t chunks = pipeline_chunks(in, "nvls");
  return evaluate(in, [&](std::uint32_t /*n*/, double s, double d, const Cost& c) { return nvls(s, d, chunks, in.switch_efficiency, c); });
}

ClosedFormResult stragglar_closed_form(const ClosedFormInput& in) {
  return evaluate(in, [&](std::uint32_t n, double s, double d, const Cost& c) {
    return stragglar(n, s, d, in.schedule_rounds, c);
  });
}

ClosedFormResult stragglar_online_closed_form(const ClosedFormInput& in) {
  if (!(in.agreement_s >= 0) || !std::isfinite(in.agreement_s)) {
    throw ConfigError(fmt::format("closed form: agreement_s = {} (must be finite and >= 0)", in.agreement_s));
  }
  // The reduce_scatter is gated at (second-to-last arrival + agreement) and the completion at
  // (last arrival + agreement): the whole run of stragglar shifted by the agreement.
  ClosedFormResult r = stragglar_closed_form(in);
  r.time_s += in.agreement_s;
  r.time_after_last_arrival_s += in.agreement_s;
  r.collective_s += in.agreement_s;
  return r;
}

double rhd_three_two_elimination_s(std::uint32_t n, double size_bytes, const LinkModel& link) {
  ClosedFormInput in;
  in.n = n;
  in.size_bytes = size_bytes;
  in.link = link;
  validate(in);
  const double pow2_floor = std::bit_floor(n);
  return 2.0 * ceil_log2(n) * link.latency_s +
         2.0 * size_bytes / link.bandwidth_Bps * (1.5 - 1.0 / pow2_floor);
}

}  // namespace collsim
