// Recursive halving / doubling AllReduce as MPICH runs it at n that is not a power of two: the
// extra ranks fold their whole buffer into a partner first and get the result back last.
// Thakur, Rabenseifner & Gropp, "Optimization of collective communication operations in MPICH"
// (IJHPCA 2005), section 4.4 (see power_of_two_fold.hpp). Kept as the MPI libraries' baseline:
// on a contention-free network it is never faster than `recursive_halving_doubling` (3-2
// elimination), which moves s/2 instead of s per rank in its extra rounds.
//
// The fold round (n = 6, p = 4: ranks 0 and 2 are extra, 1 3 4 5 are the core ranks 0..3):
//
//     r0 ==whole buffer==> r1 (adds)      r2 ==whole buffer==> r3 (adds)      r4, r5 idle
//
// then the p core ranks run the power-of-two halving and doubling (hypercube_rounds.hpp), and
// the unfold round copies the result back: r1 ==> r0, r3 ==> r2.
//
// Phases: "reduce_scatter" (for n not a power of two its first round is the fold, so that every
// rank takes part in the first phase and a bulk-synchronous start waits for all of them),
// "all_gather", and "unfold" (only for n not a power of two).
// Rounds: 2 log2 p, plus 2 when n != p. num_chunks = p. One port.
#include "collsim/algorithms/generators.hpp"
#include "hypercube_rounds.hpp"
#include "power_of_two_fold.hpp"

namespace collsim {

std::string recursive_halving_doubling_fold_unsupported(Rank /*n*/) { return {}; }

Schedule generate_recursive_halving_doubling_fold(const AlgorithmOptions& options) {
  const PowerOfTwoFold fold(options.n);
  const Rank p = fold.p;
  const auto core = [&fold](Rank v) { return fold.core(v); };
  Schedule s;
  s.n = options.n;
  s.num_chunks = p;

  Phase& rs = s.add_phase("reduce_scatter");
  fold.append_fold_in(rs, p);
  append_halving_levels(rs, p, 0, core);

  append_doubling_levels(s.add_phase("all_gather"), p, fold.levels(), core);

  if (fold.extra > 0) fold.append_fold_out(s.add_phase("unfold"), p);
  return s;
}

}  // namespace collsim
