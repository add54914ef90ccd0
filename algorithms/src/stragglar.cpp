// StragglAR: AllReduce with a persistent straggler. Devraj, Ding, Vijaya Kumar, Kleinberg,
// Singh, "Accelerating AllReduce with a Persistent Straggler" (arXiv 2505.23523, 2025).
//
// The buffer is cut into N = n-1 chunks. While the straggler S = n-1 is late, ranks 0..n-2 run a
// ring ReduceScatter so that rank g holds chunk g reduced over all of them (phase
// "reduce_scatter"). When S arrives, completion round t swaps chunk t between rank t and S (both
// add: the only reductions of phase "completion"); every other transfer forwards one fully
// reduced chunk, one send and one receive per rank and round. A round of the paper's n = 8
// schedule (S = 7):
//
//     round 4:   4 <==> 7  c4          exchange, reduce both ways
//                5 <--> 2  c1 / c2     swap of two fully reduced chunks
//                6 <--> 0  c2 / c1
//                1 <--> 3  c1 / c3
//
// Round counts (lower bound N: every rank receives N chunks, one per round; in this model also
// N - 1 + ceil(log2 n), since the last exchanged chunk has two holders and needs n):
//  - n = 2^L: exactly n - 2 + L rounds by a construction over GF(2^L) (stragglar_field.cpp);
//  - other n: a cyclic construction reaching n - 2 + ceil(log2 n) where a layout exists
//    (stragglar_cyclic.cpp), otherwise the greedy matching planner (stragglar_greedy.cpp).
// docs/stragglar_rounds.md lists what is reached for every n up to 256.
#include <fmt/format.h>

#include <bit>
#include <numeric>
#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"
#include "stragglar_internal.hpp"

namespace collsim {

std::string stragglar_unsupported(Rank /*n*/) { return {}; }

Schedule generate_stragglar(const AlgorithmOptions& options) {
  const Rank n = options.n;
  if (n < 2) throw ScheduleError(fmt::format("stragglar: n = {} is not supported (n must be at least 2)", n));
  Schedule s;
  s.n = n;
  s.num_chunks = n - 1;
  s.straggler = n - 1;
  std::vector<Rank> ready(n - 1);
  std::iota(ready.begin(), ready.end(), Rank{0});
  // n = 2: the single ready rank already holds the only chunk; the phase stays empty.
  Phase& reduce_scatter = s.add_phase("reduce_scatter");
  if (n > 2) append_ring_reduce_scatter(reduce_scatter, ready, 0);

  Phase& completion = s.add_phase("completion");
  // Every construction moves exactly n(n-1) chunks: N exchanges both ways plus N(N-1) copies.
  completion.reserve(static_cast<std::size_t>(n) * (n - 1));
  if (n == 2) {
    stragglar::CompletionState state(n);
    state.apply_round(Rank{0}, {}, &completion);
  } else if (std::has_single_bit(n)) {
    stragglar::build_power_of_two(n, completion);
  } else if (!stragglar::build_cyclic(n, completion)) {
    stragglar::build_greedy(n, completion);
  }
  return s;
}

}  // namespace collsim
