// Recursive halving / doubling AllReduce (Rabenseifner's algorithm) for every n, with 3-2
// elimination for n that is not a power of two: R. Rabenseifner and J. L. Traeff, "More efficient
// reduction algorithms for non-power-of-two number of processors in message-passing parallel
// systems" (EuroPVM/MPI 2004). The power-of-two core is Rabenseifner, "Optimization of collective
// reduction operations" (ICCS 2004): a recursive-halving ReduceScatter, then a recursive-doubling
// AllGather (hypercube_rounds.hpp).
//
// n = p + r with p the largest power of two <= n. Ranks 0..r-1 are "extra"; ranks r..n-1 are the
// core ranks 0..p-1. The first halving level of the core pairs core j ("a", keeps the lower half)
// with core j + p/2 ("b", keeps the upper half). Extra rank e joins pair e mod p/2, so a pair has
// no extra (a plain pair: one exchange), one (a triple) or, when r > p/2, two (a quad). The first
// level then takes two rounds in which every message is half the buffer, and leaves a and b
// holding the lower and upper half reduced over the whole group; the extras drop out until the
// last level of the AllGather, which undoes this in two rounds of half-buffer copies.
//
// The two elimination rounds of a triple (L = lower half, U = upper half, '+' = receiver adds):
//
//     round 1:   c --L+--> a      a --U+--> b
//     round 2:   c --U+--> b      b --L+--> a        a holds L of a+b+c, b holds U of a+b+c
//
// and of a quad:  round 1: c --L+--> a, a --U+--> c, c2 --U+--> b, b --L+--> c2;
//                 round 2: c --U+--> b, c2 --L+--> a.
//
// Cost (alpha-beta, no reduction cost): 2 ceil(log2 n) alpha + 2 s beta (1.5 - 1/p), the 3-2
// elimination bound quoted by the StragglAR paper (models: rhd_three_two_elimination_s); MPICH's
// fold (recursive_halving_doubling_fold) pays 2 s beta (2 - 1/p). Why not a bandwidth-optimal
// any-n variant (Bruck-style, Swing): docs/recursive_halving_doubling.md.
//
// Phases: "reduce_scatter" (every rank takes part, so a bulk-synchronous start waits for all),
// "all_gather". Rounds: 2 log2 p, plus 2 when n != p. num_chunks = p. One port.
// Rank n-1 (the default straggler) is the b of the last pair, a plain pair when r < p/2: its
// delay then overlaps the triples' first elimination round in eager mode.
#include "collsim/algorithms/generators.hpp"
#include "hypercube_rounds.hpp"

#include <bit>

namespace collsim {
namespace {

// The group of core pair j (0 <= j < p/2): its core ranks and the extras attached to it.
struct EliminationGroup {
  Rank a, b;
  bool has_c, has_c2;
  Rank c, c2;
};

EliminationGroup group_of(Rank j, Rank p, Rank extra) {
  const Rank half = p / 2;
  return {extra + j, extra + j + half, j < extra, j + half < extra, j, j + half};
}

void append_elimination(Phase& rs, Rank p, Rank extra) {
  const Rank half = p / 2;
  rs.begin_round();
  for (Rank j = 0; j < half; ++j) {
    const EliminationGroup g = group_of(j, p, extra);
    if (!g.has_c) {
      rs.add(g.a, g.b, half, half, Op::Reduce);
      rs.add(g.b, g.a, 0, half, Op::Reduce);
      continue;
    }
    rs.add(g.c, g.a, 0, half, Op::Reduce);
    if (!g.has_c2) {
      rs.add(g.a, g.b, half, half, Op::Reduce);
    } else {
      rs.add(g.a, g.c, half, half, Op::Reduce);
      rs.add(g.c2, g.b, half, half, Op::Reduce);
      rs.add(g.b, g.c2, 0, half, Op::Reduce);
    }
  }
  rs.begin_round();
  for (Rank j = 0; j < half && j < extra; ++j) {
    const EliminationGroup g = group_of(j, p, extra);
    rs.add(g.c, g.b, half, half, Op::Reduce);
    rs.add(g.has_c2 ? g.c2 : g.b, g.a, 0, half, Op::Reduce);
  }
}

// The inverse, with copies: a holds the lower half, b the upper half of the result.
//   triple: round 1  b --U--> a, a --L--> c;   round 2  a --L--> b, b --U--> c
//   quad:   round 1  a --L--> c, b --U--> c2;  round 2  a <-> b, c <-> c2 (each sends its half)
void append_unelimination(Phase& ag, Rank p, Rank extra) {
  const Rank half = p / 2;
  ag.begin_round();
  for (Rank j = 0; j < half; ++j) {
    const EliminationGroup g = group_of(j, p, extra);
    if (!g.has_c) {
      ag.add(g.a, g.b, 0, half, Op::Copy);
      ag.add(g.b, g.a, half, half, Op::Copy);
    } else if (!g.has_c2) {
      ag.add(g.b, g.a, half, half, Op::Copy);
      ag.add(g.a, g.c, 0, half, Op::Copy);
    } else {
      ag.add(g.a, g.c, 0, half, Op::Copy);
      ag.add(g.b, g.c2, half, half, Op::Copy);
    }
  }
  ag.begin_round();
  for (Rank j = 0; j < half && j < extra; ++j) {
    const EliminationGroup g = group_of(j, p, extra);
    ag.add(g.a, g.b, 0, half, Op::Copy);
    if (!g.has_c2) {
      ag.add(g.b, g.c, half, half, Op::Copy);
    } else {
      ag.add(g.b, g.a, half, half, Op::Copy);
      ag.add(g.c, g.c2, 0, half, Op::Copy);
      ag.add(g.c2, g.c, half, half, Op::Copy);
    }
  }
}

}  // namespace

std::string recursive_halving_doubling_unsupported(Rank /*n*/) { return {}; }

Schedule generate_recursive_halving_doubling(const AlgorithmOptions& options) {
  const Rank p = std::bit_floor(options.n);
  const Rank extra = options.n - p;
  const auto core = [extra](Rank v) { return extra + v; };
  const std::uint32_t levels = hypercube_levels(p);
  Schedule s;
  s.n = options.n;
  s.num_chunks = p;

  Phase& rs = s.add_phase("reduce_scatter");
  if (extra == 0) {
    append_halving_levels(rs, p, 0, core);
  } else {
    append_elimination(rs, p, extra);
    append_halving_levels(rs, p, 1, core);
  }

  Phase& ag = s.add_phase("all_gather");
  if (extra == 0) {
    append_doubling_levels(ag, p, levels, core);
  } else {
    append_doubling_levels(ag, p, levels - 1, core);
    append_unelimination(ag, p, extra);
  }
  return s;
}

}  // namespace collsim
