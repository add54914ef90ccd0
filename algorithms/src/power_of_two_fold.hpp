// The standard way (MPICH, Thakur et al. 2005) to run a hypercube algorithm on n ranks that is
// not a power of two: with p = the largest power of two <= n and r = n - p, ranks 0..2r-1 pair
// up, the even one of each pair ("extra") folds its whole buffer into the odd one before the
// hypercube part and gets the result back after it. The p "core" ranks are the odd ranks below
// 2r and every rank from 2r on, renumbered 0..p-1 in rank order.
//
// Rank n-1 (where generators put the straggler) is therefore always a core rank that does not
// fold (n - 1 >= 2r because n < 2p): its contribution is first needed after the fold round, so
// the fold runs while the straggler is still late instead of after it arrives.
#pragma once

#include <bit>
#include <cstdint>

#include "collsim/algorithms/schedule.hpp"

namespace collsim {

struct PowerOfTwoFold {
  explicit PowerOfTwoFold(Rank n) : p(std::bit_floor(n)), extra(n - std::bit_floor(n)) {}

  Rank p;      ///< core ranks (a power of two)
  Rank extra;  ///< ranks that fold into a partner, 0 when n is a power of two

  /// Real rank of core index v (0 <= v < p).
  Rank core(Rank v) const { return v < extra ? 2 * v + 1 : v + extra; }
  /// log2(p): rounds of the hypercube part.
  std::uint32_t levels() const { return static_cast<std::uint32_t>(std::countr_zero(p)); }

  /// Opens a round in which every extra rank sends chunks [0, num_chunks) to its partner,
  /// which adds them. Does nothing when n is a power of two.
  void append_fold_in(Phase& phase, std::uint32_t num_chunks) const {
    if (extra == 0) return;
    phase.begin_round();
    for (Rank e = 0; e < extra; ++e) phase.add(2 * e, 2 * e + 1, 0, num_chunks, Op::Reduce);
  }
  /// Opens a round in which every partner copies the finished buffer back to its extra rank.
  void append_fold_out(Phase& phase, std::uint32_t num_chunks) const {
    if (extra == 0) return;
    phase.begin_round();
    for (Rank e = 0; e < extra; ++e) phase.add(2 * e + 1, 2 * e, 0, num_chunks, Op::Copy);
  }
};

}  // namespace collsim
