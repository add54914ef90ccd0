// StragglAR completion rounds for n = 2^L (L >= 2) in exactly n - 2 + L rounds, built over the
// finite field GF(2^L). Our own construction; the round count is the one the StragglAR paper
// (Devraj et al., arXiv 2505.23523) reaches for powers of two.
//
// Label non-straggler g with the field element w^g (w a primitive element) and the straggler
// with 0. In round t every rank x is paired with x + w^t (addition = XOR), so each round is a
// perfect matching of all n ranks and the pair {w^t, 0} is the straggler exchange of chunk t:
//
//     round t:  w^t <==> 0 (S)     x <--> x + w^t   for every other x   (both directions)
//
// Spreading: after round c + k (k < L) chunk c is held by w^c * (1 + V_k), V_k the span of
// w, ..., w^k, so every holder doubles it along w^(c+k). With E_k = span(w^-1, ..., w^-k), the
// rank x sends in round t the chunk t - k where k is the highest index of a nonzero coordinate
// of x * w^-t in the basis (w^-1, ..., w^-L); the sets w^-k (1 + V_(k-1)) = E_k \ E_(k-1)
// partition the nonzero elements, so every rank sends exactly one chunk per round. The step
// from 2^(L-1) holders to all n-1 finishes chunk t-L; its one idle holder, w^t = w^(t-L) w^L,
// lies in w^(t-L)(1 + V_(L-1)) because the primitive polynomial has constant term 1, so it is
// exactly the exchanger of round t. After the last exchange the same pairing continues with
// the straggler (which then holds everything) taking part, each pair moving the newest chunk
// the partner lacks; this finishes the last chunk one round before plain doubling would.
// Tested to reach n - 2 + L exactly for every n = 4..4096; larger n fall back to the greedy
// planner for any round this ending might leave.
#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "collsim/models/error.hpp"
#include "stragglar_internal.hpp"

namespace collsim::stragglar {
namespace {

// exp[i] = w^i for i < 2^L - 1 and log[exp[i]] = i, w a root of the smallest primitive
// polynomial of degree L (found by trying candidates: the first works within a few tries).
struct Field {
  std::vector<std::uint32_t> exp;
  std::vector<std::uint32_t> log;
};

Field make_field(std::uint32_t degree) {
  const std::uint32_t size = std::uint32_t{1} << degree;
  const std::uint32_t order = size - 1;
  Field f;
  for (std::uint32_t poly = size | 1; poly < 2 * size; poly += 2) {
    f.exp.assign(order, 0);
    f.log.assign(size, order);
    std::uint32_t x = 1;
    bool primitive = true;
    for (std::uint32_t i = 0; i < order; ++i) {
      if (f.log[x] != order) {
        primitive = false;
        break;
      }
      f.exp[i] = x;
      f.log[x] = i;
      x <<= 1;
      if (x & size) x ^= poly;
    }
    if (primitive && x == 1) return f;
  }
  throw InternalError(fmt::format("stragglar: no primitive polynomial of degree {} found", degree));
}

}  // namespace

void build_power_of_two(Rank n, Phase& phase) {
  COLLSIM_ASSERT(n >= 4 && std::has_single_bit(n), fmt::format("stragglar field construction needs a power of two, got {}", n));
  const auto degree = static_cast<std::uint32_t>(std::countr_zero(n));
  const Rank chunks = n - 1;
  const Rank s = n - 1;
  const Field f = make_field(degree);
  // level[d]: the spreading step at which rank t + d works in round t (relative position d).
  std::vector<std::uint32_t> level(chunks);
  for (std::uint32_t d = 0; d < chunks; ++d) {
    level[d] = degree - static_cast<std::uint32_t>(std::countr_zero(f.exp[(d + degree) % chunks]));
  }

  CompletionState state(n);
  std::vector<Move> moves;
  moves.reserve(n);
  for (Rank t = 0; t < chunks; ++t) {
    moves.clear();
    for (Rank x = 0; x < chunks; ++x) {
      if (x == t) continue;
      const std::uint32_t k = level[(x + chunks - t) % chunks];
      if (k > t) continue;  // that chunk is not exchanged yet
      moves.push_back(Move{x, f.log[f.exp[x] ^ f.exp[t]], t - k});
    }
    state.apply_round(t, moves, &phase);
  }

  std::vector<std::uint32_t> newest_first;
  for (std::uint32_t extra = 0; extra + 1 < degree && !state.done(); ++extra) {
    const std::uint32_t shift = f.exp[(chunks + extra) % chunks];
    newest_first = state.in_flight();
    std::sort(newest_first.rbegin(), newest_first.rend());
    moves.clear();
    for (Rank x = 0; x < n; ++x) {
      const std::uint32_t partner_element = (x == s ? 0 : f.exp[x]) ^ shift;
      const Rank partner = partner_element == 0 ? s : f.log[partner_element];
      if (partner == s) continue;  // the straggler already holds everything
      const auto it = std::find_if(newest_first.begin(), newest_first.end(), [&](std::uint32_t c) {
        return state.has(x, c) && !state.has(partner, c);
      });
      if (it != newest_first.end()) moves.push_back(Move{x, partner, *it});
    }
    state.apply_round(std::nullopt, moves, &phase);
  }
  if (!state.done()) finish_greedy(state, target_rounds(n), kGreedySeed, &phase);
}

}  // namespace collsim::stragglar
