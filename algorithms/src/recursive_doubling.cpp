// Recursive doubling AllReduce: log2 p rounds in which partners at distance 1, 2, 4, ... swap
// their whole buffers and both add. Thakur, Rabenseifner & Gropp, "Optimization of collective
// communication operations in MPICH" (IJHPCA 2005), the latency-optimal choice for short
// messages; n that is not a power of two is handled by folding (see power_of_two_fold.hpp).
//
// One round (p = 4 core ranks, round 1, partner at distance 2):
//
//     r0 <==buffer==> r2        r1 <==buffer==> r3        (both sides add)
//
// Phases: "exchange" (for n not a power of two its first round is the fold of the extra ranks)
// and "unfold" (only for n not a power of two). Rounds: log2 p, plus 2 when n != p.
// num_chunks = 1: every message is the whole buffer. One port.
#include "collsim/algorithms/generators.hpp"
#include "power_of_two_fold.hpp"

namespace collsim {

std::string recursive_doubling_unsupported(Rank /*n*/) { return {}; }

Schedule generate_recursive_doubling(const AlgorithmOptions& options) {
  const PowerOfTwoFold fold(options.n);
  Schedule s;
  s.n = options.n;
  s.num_chunks = 1;
  Phase& exchange = s.add_phase("exchange");
  fold.append_fold_in(exchange, 1);
  for (std::uint32_t k = 0; k < fold.levels(); ++k) {
    const Rank mask = Rank{1} << k;
    exchange.begin_round();
    for (Rank v = 0; v < fold.p; ++v) exchange.add(fold.core(v), fold.core(v ^ mask), 0, 1, Op::Reduce);
  }
  if (fold.extra > 0) fold.append_fold_out(s.add_phase("unfold"), 1);
  return s;
}

}  // namespace collsim
