// Recursive halving / doubling AllReduce (Rabenseifner's algorithm) for every n, with 3-2
// elimination for n that is not a power of two: R. Rabenseifner and J. L. Traeff, "More efficient
// reduction algorithms for non-power-of-two number of processors in message-passing parallel
// systems" (EuroPVM/MPI 2004). The power-of-two core is Rabenseifner, "Optimization of collective
// reduction operations" (ICCS 2004): a recursive-halving ReduceScatter, then a recursive-doubling
// AllGather (hypercube_rounds.hpp).
//
// n = 2^t g with g odd, p the largest power of two <= n, p' = p / 2^t. The first t halving
// levels pair all n ranks evenly (subgroup w with subgroup w ^ mask, member for member), which
// leaves 2^t subgroups of g ranks, each owning a window of s / 2^t. Then:
//  * g = 3 or 9: radix-3 levels, each two dissemination rounds among three ranks (Bruck, Ho,
//    Kipnis, Upfal & Weathersby, IEEE TPDS 1997) with one contiguous block per message, which is
//    bandwidth-optimal: n = 3 2^t and 9 2^t move s (n - 1)/n per direction in ceil(log2 n)
//    rounds;
//  * otherwise 3-2 elimination: the next level pairs core a (keeps the lower half of the window)
//    with core b (keeps the upper half); the g - p' extra ranks join those pairs, one each (a
//    triple) or, when g - p' > p'/2, two (a quad); a pair without extras does one exchange. That
//    level takes two rounds whose messages are half the window; then the extras drop out and the
//    p core ranks finish the hypercube.
// The AllGather mirrors it. Running the elimination at level t rather than first (where
// Rabenseifner and Traeff put it) is what makes even n cheaper: its extra round moves
// s / 2^(t+1), not s / 2.
//
// The two elimination rounds of a triple (L / U = lower / upper half of the window, '+' = the
// receiver adds):
//
//     round 1:   c --L+--> a      a --U+--> c                   (b idle)
//     round 2:   c --U+--> b      b --L+--> a        a holds L of a+b+c, b holds U of a+b+c
//
// A quad adds c2 <--> b in round 1 (c2 sends U, b sends L) and sends c2 --L+--> a instead of b
// in round 2.
//
// Cost (alpha-beta-gamma, no delay): 2 ceil(log2 n) alpha + (2 beta + gamma) s f with
// f = 1 - 1/p + 1/2^(t+1) (3-2 elimination) or f = (n - 1)/n (g = 3, 9). That is the 3-2
// elimination bound quoted by the StragglAR paper (models: rhd_three_two_elimination_s,
// f = 1.5 - 1/p) at odd n other than 3 and 9, and below it at every other n; MPICH's fold
// (recursive_halving_doubling_fold) pays f = 2 - 1/p. Why not bandwidth-optimal at every n:
// docs/recursive_halving_doubling.md.
//
// Phases: "reduce_scatter" (every rank takes part, so a bulk-synchronous start waits for all),
// "all_gather". Rounds: 2 log2 p, plus 2 when n != p. num_chunks = n when g = 3 or 9, else p.
// One port.
// Rank n-1 (the default straggler) is member g-1 of the last subgroup. Under 3-2 elimination
// that is the b of the last pair, which is never a quad, and b is idle in the first elimination
// round, so in eager mode up to one elimination message of its delay is hidden.
#include "collsim/algorithms/generators.hpp"
#include "hypercube_rounds.hpp"

#include <algorithm>
#include <bit>
#include <vector>

namespace collsim {
namespace {

// n = 2^t g with g odd. Rank w g + u is member u of subgroup w (0 <= w < 2^t, 0 <= u < g).
// Subgroup w's window is chunks [w cw, (w + 1) cw). When g = 3 or 9 the window has cw = g
// chunks, member u's being chunk w cw + u. Otherwise cw = p' = bit_floor(g) = p / 2^t, members
// 0..r'-1 (r' = g - p') are the subgroup's extras and members r'..g-1 its core ranks 0..p'-1;
// core rank v' of subgroup w has the global core index w p' + v' and ends owning that chunk.
struct Layout {
  explicit Layout(Rank n)
      : p(std::bit_floor(n)),
        top(static_cast<std::uint32_t>(std::countr_zero(n))),
        g(n >> top),
        p_sub(std::bit_floor(g)),
        extra_sub(g - std::bit_floor(g)),
        window(radix3(g) ? g : std::bit_floor(g)) {}

  /// Subgroups of 3 and 9 use radix-3 levels: two rounds per factor of three, which is
  /// ceil(log2 g) rounds for these two (and one round too many from 27 on).
  static bool radix3(Rank g) { return g == 3 || g == 9; }

  Rank p;
  std::uint32_t top;  ///< t: levels halved evenly over all ranks before the subgroups work alone
  Rank g;
  Rank p_sub;
  Rank extra_sub;
  Rank window;        ///< cw: chunks per subgroup window

  Rank rank(Rank w, Rank u) const { return w * g + u; }
  Rank core(Rank v) const { return rank(v / p_sub, extra_sub + v % p_sub); }
};

// The group of core pair j of subgroup w: a keeps the lower half of the window, b the upper half.
struct EliminationGroup {
  Rank a, b;
  bool has_c, has_c2;
  Rank c, c2;
  std::uint32_t lower, upper, half;  ///< first chunk of each half, chunks per half
};

EliminationGroup group_of(const Layout& l, Rank w, Rank j) {
  const Rank half = l.p_sub / 2;
  const Rank e = l.extra_sub;
  const std::uint32_t base = w * l.p_sub;
  return {l.rank(w, e + j), l.rank(w, e + j + half), j < e, j + half < e, l.rank(w, j), l.rank(w, j + half),
          base, base + half, half};
}

void append_elimination(Phase& rs, const Layout& l) {
  const Rank subgroups = Rank{1} << l.top;
  rs.begin_round();
  for (Rank w = 0; w < subgroups; ++w) {
    for (Rank j = 0; j < l.p_sub / 2; ++j) {
      const EliminationGroup g = group_of(l, w, j);
      if (!g.has_c) {
        rs.add(g.a, g.b, g.upper, g.half, Op::Reduce);
        rs.add(g.b, g.a, g.lower, g.half, Op::Reduce);
        continue;
      }
      // b stays idle in a triple's first round, so that a late b (the straggler) is first
      // needed in the second one.
      rs.add(g.c, g.a, g.lower, g.half, Op::Reduce);
      rs.add(g.a, g.c, g.upper, g.half, Op::Reduce);
      if (g.has_c2) {
        rs.add(g.c2, g.b, g.upper, g.half, Op::Reduce);
        rs.add(g.b, g.c2, g.lower, g.half, Op::Reduce);
      }
    }
  }
  rs.begin_round();
  for (Rank w = 0; w < subgroups; ++w) {
    for (Rank j = 0; j < l.p_sub / 2 && j < l.extra_sub; ++j) {
      const EliminationGroup g = group_of(l, w, j);
      rs.add(g.c, g.b, g.upper, g.half, Op::Reduce);
      rs.add(g.has_c2 ? g.c2 : g.b, g.a, g.lower, g.half, Op::Reduce);
    }
  }
}

// The inverse, with copies: a holds the lower half, b the upper half of the result.
//   triple: round 1  b --U--> a, a --L--> c;   round 2  a --L--> b, b --U--> c
//   quad:   round 1  a --L--> c, b --U--> c2;  round 2  a <-> b, c <-> c2 (each sends its half)
void append_unelimination(Phase& ag, const Layout& l) {
  const Rank subgroups = Rank{1} << l.top;
  ag.begin_round();
  for (Rank w = 0; w < subgroups; ++w) {
    for (Rank j = 0; j < l.p_sub / 2; ++j) {
      const EliminationGroup g = group_of(l, w, j);
      if (!g.has_c) {
        ag.add(g.a, g.b, g.lower, g.half, Op::Copy);
        ag.add(g.b, g.a, g.upper, g.half, Op::Copy);
      } else if (!g.has_c2) {
        ag.add(g.b, g.a, g.upper, g.half, Op::Copy);
        ag.add(g.a, g.c, g.lower, g.half, Op::Copy);
      } else {
        ag.add(g.a, g.c, g.lower, g.half, Op::Copy);
        ag.add(g.b, g.c2, g.upper, g.half, Op::Copy);
      }
    }
  }
  ag.begin_round();
  for (Rank w = 0; w < subgroups; ++w) {
    for (Rank j = 0; j < l.p_sub / 2 && j < l.extra_sub; ++j) {
      const EliminationGroup g = group_of(l, w, j);
      ag.add(g.a, g.b, g.lower, g.half, Op::Copy);
      if (!g.has_c2) {
        ag.add(g.b, g.c, g.upper, g.half, Op::Copy);
      } else {
        ag.add(g.b, g.a, g.upper, g.half, Op::Copy);
        ag.add(g.c, g.c2, g.lower, g.half, Op::Copy);
        ag.add(g.c2, g.c, g.upper, g.half, Op::Copy);
      }
    }
  }
}

// Subgroups of g = 3 or 9 reduce-scatter their window of g chunks with radix-3 levels of two
// dissemination rounds each (Bruck et al.'s pattern among three). Member u's digit at stride S
// (S = g/3, ..., 1) picks one of three blocks of S chunks in its current window. In each round
// every member sends one block, so a level moves 2/3 of the window, the optimum; member u ends
// owning chunk u. Reduce_scatter: with d = u's digit and v the member whose digit is d + k
// (mod 3), u sends v the block of v's digit in round k = 2, then k = 1, and v adds it. The
// all_gather runs the levels backwards, u copying its own block to v in rounds k = 1, then 2.
//   g = 3, reduce_scatter:  round 1  u --chunk u+2 (+)--> u+2,   round 2  u --chunk u+1 (+)--> u+1
void append_radix3_levels(Phase& phase, const Layout& l, bool reduce) {
  const Rank subgroups = Rank{1} << l.top;
  std::vector<Rank> strides;
  for (Rank stride = l.g / 3; stride >= 1; stride /= 3) strides.push_back(stride);
  if (!reduce) std::reverse(strides.begin(), strides.end());
  for (Rank stride : strides) {
    for (Rank k : {reduce ? 2u : 1u, reduce ? 1u : 2u}) {
      phase.begin_round();
      for (Rank w = 0; w < subgroups; ++w) {
        for (Rank u = 0; u < l.g; ++u) {
          const Rank digit = u / stride % 3;
          const Rank to = u - digit * stride + (digit + k) % 3 * stride;
          const Rank window_begin = w * l.window + u / (3 * stride) * (3 * stride);
          const Rank block = reduce ? (digit + k) % 3 : digit;
          phase.add(l.rank(w, u), l.rank(w, to), window_begin + block * stride, stride,
                    reduce ? Op::Reduce : Op::Copy);
        }
      }
    }
  }
}

// The even levels over all n ranks: member u of subgroup w pairs with member u of subgroup
// w ^ mask. In halving level k (k < t) the block of 2 mask subgroup windows around w is split,
// the subgroup with the mask bit clear keeping the lower half; doubling level k sends the block
// of 2^k windows held, the one around w.
void append_top_levels(Phase& phase, const Layout& l, bool halving) {
  const Rank subgroups = Rank{1} << l.top;
  for (std::uint32_t k = 0; k < l.top; ++k) {
    const Rank mask = halving ? subgroups >> (k + 1) : Rank{1} << k;
    phase.begin_round();
    for (Rank w = 0; w < subgroups; ++w) {
      const Rank lo = w & ~(2 * mask - 1);
      const Rank first = halving ? ((w & mask) == 0 ? lo + mask : lo) : w & ~(mask - 1);
      const Op op = halving ? Op::Reduce : Op::Copy;
      for (Rank u = 0; u < l.g; ++u) {
        phase.add(l.rank(w, u), l.rank(w ^ mask, u), first * l.window, mask * l.window, op);
      }
    }
  }
}

}  // namespace

std::string recursive_halving_doubling_unsupported(Rank /*n*/) { return {}; }

Schedule generate_recursive_halving_doubling(const AlgorithmOptions& options) {
  const Layout l(options.n);
  const auto core = [&l](Rank v) { return l.core(v); };
  const std::uint32_t levels = hypercube_levels(l.p);
  Schedule s;
  s.n = options.n;
  s.num_chunks = l.window << l.top;
  Phase& rs = s.add_phase("reduce_scatter");
  if (l.extra_sub == 0) {  // n is a power of two: the plain hypercube
    append_halving_levels(rs, l.p, 0, core);
    append_doubling_levels(s.add_phase("all_gather"), l.p, levels, core);
    return s;
  }
  append_top_levels(rs, l, true);
  if (Layout::radix3(l.g)) {
    append_radix3_levels(rs, l, true);
    // Added only now: add_phase may move the phases, and with them `rs`.
    Phase& ag = s.add_phase("all_gather");
    append_radix3_levels(ag, l, false);
    append_top_levels(ag, l, false);
    return s;
  }
  append_elimination(rs, l);
  append_halving_levels(rs, l.p, l.top + 1, core);
  Phase& ag = s.add_phase("all_gather");
  append_doubling_levels(ag, l.p, levels - l.top - 1, core);
  append_unelimination(ag, l);
  append_top_levels(ag, l, false);
  return s;
}

}  // namespace collsim
