// The power-of-two core of Rabenseifner's recursive halving / doubling, shared by the two ways
// of running it on n ranks that is not a power of two (recursive_halving_doubling.cpp with 3-2
// elimination, recursive_halving_doubling_fold.cpp with MPICH's fold). The p core ranks are
// addressed by a core index v in 0..p-1; `core(v)` gives the real rank. num_chunks = p.
//
// Halving level k (mask p / 2^(k+1), window p / 2^k aligned chunks): v and v ^ mask each keep
// one half of their window (the one with the mask bit clear keeps the lower half) and send the
// other half to the partner, which adds it. After all log2 p levels core v owns chunk v fully
// reduced. Doubling level k (mask 2^k) undoes halving level log2 p - 1 - k with copies.
#pragma once

#include <bit>
#include <cstdint>

#include "collsim/algorithms/schedule.hpp"

namespace collsim {

/// log2(p) for p a power of two.
inline std::uint32_t hypercube_levels(Rank p) { return static_cast<std::uint32_t>(std::countr_zero(p)); }

/// Appends halving levels first_level .. log2 p - 1, one round each.
template <class CoreRank>
void append_halving_levels(Phase& phase, Rank p, std::uint32_t first_level, CoreRank core) {
  for (std::uint32_t k = first_level; k < hypercube_levels(p); ++k) {
    const Rank mask = p >> (k + 1);
    const Rank window = p >> k;
    phase.begin_round();
    for (Rank v = 0; v < p; ++v) {
      const Rank lo = v & ~(window - 1);
      const Rank send_begin = (v & mask) == 0 ? lo + window / 2 : lo;
      phase.add(core(v), core(v ^ mask), send_begin, window / 2, Op::Reduce);
    }
  }
}

/// Appends doubling levels 0 .. end_level - 1 (end_level <= log2 p), one round each: at level k
/// core v sends the 2^k chunks it holds (the aligned block containing chunk v) to v ^ 2^k.
template <class CoreRank>
void append_doubling_levels(Phase& phase, Rank p, std::uint32_t end_level, CoreRank core) {
  for (std::uint32_t k = 0; k < end_level; ++k) {
    const Rank mask = Rank{1} << k;
    phase.begin_round();
    for (Rank v = 0; v < p; ++v) phase.add(core(v), core(v ^ mask), v & ~(mask - 1), mask, Op::Copy);
  }
}

}  // namespace collsim
