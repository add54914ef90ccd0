// Recursive halving / doubling AllReduce (Rabenseifner's algorithm): a recursive-halving
// ReduceScatter followed by a recursive-doubling AllGather. R. Rabenseifner, "Optimization of
// collective reduction operations" (ICCS 2004); Thakur, Rabenseifner & Gropp, "Optimization of
// collective communication operations in MPICH" (IJHPCA 2005), whose handling of n that is not
// a power of two is used here (see power_of_two_fold.hpp).
//
// One halving round (p = 4 core ranks, round 0, chunks 0..3): partners at distance p/2 swap
// the half of the current window the other keeps, and add what they receive.
//
//     c0 c1 | c2 c3          r0 <--c0 c1-- r2        r0 keeps c0 c1, r2 keeps c2 c3
//                            r0 --c2 c3--> r2        (r1 <-> r3 likewise)
//
// Round k halves the window again with the partner at distance p/2^(k+1); after log2 p rounds
// core rank v owns chunk v fully reduced. The AllGather runs the rounds backwards with copies.
//
// Phases: "reduce_scatter" (for n not a power of two its first round is the fold of the extra
// ranks, so that every rank takes part in the first phase and a bulk-synchronous start waits
// for all of them), "all_gather", and "unfold" (only for n not a power of two).
// Rounds: 2 log2 p, plus 2 when n != p. num_chunks = p. One port.
#include "collsim/algorithms/generators.hpp"
#include "power_of_two_fold.hpp"

namespace collsim {

std::string recursive_halving_doubling_unsupported(Rank /*n*/) { return {}; }

Schedule generate_recursive_halving_doubling(const AlgorithmOptions& options) {
  const PowerOfTwoFold fold(options.n);
  const Rank p = fold.p;
  Schedule s;
  s.n = options.n;
  s.num_chunks = p;

  Phase& rs = s.add_phase("reduce_scatter");
  fold.append_fold_in(rs, p);
  for (std::uint32_t k = 0; k < fold.levels(); ++k) {
    const Rank mask = p >> (k + 1);
    const Rank window = p >> k;
    rs.begin_round();
    for (Rank v = 0; v < p; ++v) {
      const Rank lo = v & ~(window - 1);
      // The rank with the mask bit clear keeps the lower half, so it sends the upper one.
      const Rank send_begin = (v & mask) == 0 ? lo + window / 2 : lo;
      rs.add(fold.core(v), fold.core(v ^ mask), send_begin, window / 2, Op::Reduce);
    }
  }

  Phase& ag = s.add_phase("all_gather");
  for (std::uint32_t k = 0; k < fold.levels(); ++k) {
    const Rank mask = Rank{1} << k;
    ag.begin_round();
    for (Rank v = 0; v < p; ++v) {
      ag.add(fold.core(v), fold.core(v ^ mask), v & ~(mask - 1), mask, Op::Copy);
    }
  }

  if (fold.extra > 0) fold.append_fold_out(s.add_phase("unfold"), p);
  return s;
}

}  // namespace collsim
