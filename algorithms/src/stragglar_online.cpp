// stragglar_online: StragglAR whose late ranks are found when the collective runs, not when the
// schedule is built. The StragglAR construction is Devraj, Ding, Vijaya Kumar, Kleinberg, Singh,
// "Accelerating AllReduce with a Persistent Straggler" (arXiv 2505.23523, 2025); the run-time
// choice and the k-late generalisation are collsim's (docs/stragglar_online.md).
//
// The schedule is built for k late ranks at labels m..n-1 (m = n - k) arriving in that order;
// the engines' common entry relabels it for the ranks that actually come last
// (sim/src/execution_core.hpp, RunPlan). As in StragglAR the buffer is cut into n-1 chunks and
// every rank but the last one ends up owning one chunk reduced over all of them, so that the
// last arrival meets exactly StragglAR's completion:
//   reduce_scatter  ring ReduceScatter among the m first arrivals. Early rank g's piece is its
//                   own chunk plus the chunks of the late ranks it stands in for (proxy: late
//                   label m+j is proxied by j mod m); pieces are contiguous chunk ranges.
//   fold_j          (j < k-1) late rank m+j takes its chunk from its proxy and adds its own data
//                   to every other chunk where that chunk is being summed: at its proxy (later
//                   late ranks), at its owner (early ranks, earlier late ranks). n-2 rounds.
//   completion      StragglAR's completion rounds for n ranks with the last arrival as straggler.
// For k = 1 this is exactly the `stragglar` schedule. A fold round (n = 6, k = 3, m = 3):
//
//     fold_0 round 0:   0 --> 3  +c1 (3's chunk, summed over 0..2)    3 --> 1  +c3 (4's, at its proxy)
#include <fmt/format.h>

#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

std::string stragglar_online_unsupported(Rank /*n*/) { return {}; }

namespace {

// Where the chunks live. Rank label r < n-1 owns chunk chunk_of[r]; early rank g's
// ReduceScatter piece is [piece_begin[g], piece_begin[g + 1]) and starts with its own chunk.
struct Layout {
  std::vector<std::uint32_t> chunk_of;
  std::vector<std::uint32_t> piece_begin;
  std::vector<Rank> proxy_of;  // per late label m+j (index j), j < k-1
};

Layout make_layout(Rank n, Rank m) {
  const std::uint32_t folded = n - 1 - m;  // late ranks that own a chunk (all but the last)
  Layout l;
  l.chunk_of.assign(n - 1, 0);
  l.proxy_of.resize(folded);
  std::vector<std::uint32_t> size(m, 1);
  for (std::uint32_t j = 0; j < folded; ++j) {
    l.proxy_of[j] = j % m;
    ++size[j % m];
  }
  l.piece_begin.assign(m + 1, 0);
  for (Rank g = 0; g < m; ++g) l.piece_begin[g + 1] = l.piece_begin[g] + size[g];
  std::vector<std::uint32_t> next(l.piece_begin.begin(), l.piece_begin.end() - 1);
  for (Rank g = 0; g < m; ++g) l.chunk_of[g] = next[g]++;
  for (std::uint32_t j = 0; j < folded; ++j) l.chunk_of[m + j] = next[l.proxy_of[j]]++;
  return l;
}

// Ring ReduceScatter of unequal contiguous pieces among ranks 0..m-1: in step t rank g adds its
// partial of piece (g - t - 1) mod m into rank g+1, so rank g ends with piece g summed over all.
void append_piece_ring(Phase& phase, Rank m, const Layout& l) {
  for (Rank t = 0; t + 1 < m; ++t) {
    phase.begin_round();
    for (Rank g = 0; g < m; ++g) {
      const Rank piece = (g + 2 * m - t - 1) % m;
      phase.add(g, (g + 1) % m, l.piece_begin[piece], l.piece_begin[piece + 1] - l.piece_begin[piece], Op::Reduce);
    }
  }
}

}  // namespace

Schedule generate_stragglar_online(const AlgorithmOptions& options) {
  const Rank n = options.n;
  const std::uint32_t k = options.late_ranks;
  if (n < 2) throw ScheduleError(fmt::format("stragglar_online: n = {} is not supported (n must be at least 2)", n));
  if (k < 1 || k >= n) {
    throw ScheduleError(fmt::format("stragglar_online: late_ranks = {} is out of range for n = {} (valid: 1..{})", k,
                                    n, n - 1));
  }
  AlgorithmOptions whole;
  whole.n = n;
  Schedule base = generate_stragglar(whole);
  base.late_ranks = k;
  if (k == 1) return base;

  const Rank m = n - k;
  const Layout l = make_layout(n, m);
  Schedule s;
  s.n = n;
  s.num_chunks = n - 1;
  s.straggler = n - 1;
  s.late_ranks = k;
  Phase& reduce_scatter = s.add_phase("reduce_scatter");
  if (m > 1) append_piece_ring(reduce_scatter, m, l);
  for (std::uint32_t j = 0; j + 1 < k; ++j) {
    const Rank late = m + j;
    Phase& fold = s.add_phase(fmt::format("fold_{}", j));
    // The order of the sends decides how folds of close arrivals overlap. A proxy hands a chunk
    // over only after it walked through every earlier fold round it takes part in, so each later
    // late rank's chunk goes first, to its proxy, right followed by that proxy's own chunk; then
    // the other early owners, then the earlier late ones. Fold j then waits for fold i < j only
    // about 2 (j - i) rounds in.
    std::vector<Rank> order;
    order.reserve(n - 2);
    std::vector<bool> queued(n, false);
    for (Rank r = late + 1; r + 1 < n; ++r) {
      order.push_back(r);
      const Rank proxy = l.proxy_of[r - m];
      if (!queued[proxy]) order.push_back(proxy);
      queued[proxy] = true;
    }
    for (Rank r = 0; r < late; ++r) {
      if (!queued[r]) order.push_back(r);
    }
    bool took_own = false;
    for (const Rank r : order) {
      // Chunk of label r is summed at its owner once that rank is present, else at its proxy.
      const Rank at = r < late ? r : l.proxy_of[r - m];
      fold.begin_round();
      fold.add(late, at, l.chunk_of[r], 1, Op::Reduce);
      if (!took_own) {
        fold.add(l.proxy_of[j], late, l.chunk_of[late], 1, Op::Reduce);
        took_own = true;
      }
    }
  }
  // StragglAR's completion assumes rank r owns chunk r; here it owns chunk_of[r].
  Phase& completion = s.add_phase("completion");
  const Phase& published = base.phases[1];
  completion.reserve(published.num_transfers());
  for (std::size_t r = 0; r < published.num_rounds(); ++r) {
    completion.begin_round();
    for (const Transfer& t : published.round(r)) completion.add(t.src, t.dst, l.chunk_of[t.chunk_begin], 1, t.op);
  }
  return s;
}

}  // namespace collsim
