// Greedy completion rounds for StragglAR: used for n where no exact construction is known, and
// to finish the last rounds of the exact constructions.
//
// Each round is a maximum one-port matching of "sender holds a fully reduced chunk the receiver
// lacks", found by a priority greedy followed by augmenting paths (Kuhn's method on the
// implicit sender/receiver graph, walking holder lists chunk by chunk so a search costs
// O(sum of holders of the chunks in flight), about n log n). Every matched pair then moves the
// freshest chunk it can: fresh chunks must keep doubling or the pipeline stalls. Receivers that
// can no longer finish without receiving in every remaining round get matched first.
//
//        round t:   t <==> S        (exchange, reduce)
//                   a ---c---> b    (copies chosen by matching, c = freshest useful chunk)
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <utility>

#include "collsim/models/error.hpp"
#include "stragglar_internal.hpp"

namespace collsim::stragglar {

RoundPlanner::RoundPlanner(Rank n)
    : n_(n),
      dst_of_(n, -1),
      src_of_(n, -1),
      can_send_(n, 0),
      can_recv_(n, 0),
      seen_sender_(n, 0),
      seen_receiver_(n, 0),
      dead_(n, 0),
      parent_(n, 0),
      order_key_(n, 0) {}

void RoundPlanner::stable_bucket_sort(std::vector<Rank>& ranks, std::uint32_t max_key) {
  bucket_start_.assign(max_key + 2, 0);
  for (const Rank r : ranks) ++bucket_start_[order_key_[r] + 1];
  for (std::uint32_t k = 1; k < bucket_start_.size(); ++k) bucket_start_[k] += bucket_start_[k - 1];
  sorted_.resize(ranks.size());
  for (const Rank r : ranks) sorted_[bucket_start_[order_key_[r]]++] = r;
  ranks.swap(sorted_);
}

std::int64_t RoundPlanner::free_sender_for(Rank r) {
  for (std::size_t w = 0; w < words_; ++w) {
    for (std::uint64_t bits = lacks(r, w) & has_free_[w]; bits != 0; bits &= bits - 1) {
      const std::size_t slot = 64 * w + static_cast<std::size_t>(std::countr_zero(bits));
      // Lazy deletion: senders matched since the list was built are dropped on the way.
      std::vector<Rank>& free = free_holders_[slot];
      while (!free.empty() && dst_of_[free.back()] >= 0) free.pop_back();
      if (!free.empty()) return free.back();
      has_free_[w] &= ~(std::uint64_t{1} << (slot % 64));
    }
  }
  return -1;
}

bool RoundPlanner::augment(const CompletionState& st, Rank root) {
  ++stamp_;
  queue_.assign(1, root);
  seen_receiver_[root] = stamp_;
  visited_.clear();
  std::fill(seen_slots_.begin(), seen_slots_.end(), 0);
  // Free senders are looked up through per-chunk lists as soon as a receiver is reached, so a
  // short augmenting path is found without walking whole holder lists.
  const auto flip = [&](Rank last, Rank reached) {
    parent_[last] = reached;
    for (Rank x = last;;) {
      const Rank to = parent_[x];
      const std::int64_t previous = src_of_[to];
      dst_of_[x] = to;
      src_of_[to] = x;
      if (to == root) break;
      x = static_cast<Rank>(previous);
    }
    // The matching changed: what earlier failed searches wrote off may help again.
    ++dead_stamp_;
    std::fill(dead_slots_.begin(), dead_slots_.end(), 0);
  };
  if (const std::int64_t s = free_sender_for(root); s >= 0) {
    flip(static_cast<Rank>(s), root);
    return true;
  }
  for (std::size_t qi = 0; qi < queue_.size(); ++qi) {
    const Rank r = queue_[qi];
    for (std::size_t w = 0; w < words_; ++w) {
      // Once a chunk's holders have all been visited in this search, nobody reaches new senders
      // through it: skipping it keeps a search linear in the holder lists.
      std::uint64_t bits = lacks(r, w) & ~seen_slots_[w] & ~dead_slots_[w];
      seen_slots_[w] |= bits;
      for (; bits != 0; bits &= bits - 1) {
        const std::size_t slot = 64 * w + static_cast<std::size_t>(std::countr_zero(bits));
        for (const Rank s : st.holders(chunks_[slot])) {
          // Every holder reached here is matched: free ones were found by free_sender_for.
          if (!can_send_[s] || dst_of_[s] < 0 || seen_sender_[s] == stamp_ || dead_[s] == dead_stamp_) continue;
          seen_sender_[s] = stamp_;
          visited_.push_back(s);
          parent_[s] = r;
          const auto next = static_cast<Rank>(dst_of_[s]);
          if (seen_receiver_[next] == stamp_) continue;
          seen_receiver_[next] = stamp_;
          queue_.push_back(next);
          if (const std::int64_t f = free_sender_for(next); f >= 0) {
            flip(static_cast<Rank>(f), next);
            return true;
          }
        }
      }
    }
  }
  // No augmenting path through these senders (nor through the chunks whose holders were all
  // visited) while the matching stays as it is.
  for (const Rank s : visited_) dead_[s] = dead_stamp_;
  for (std::size_t w = 0; w < words_; ++w) dead_slots_[w] |= seen_slots_[w];
  return false;
}

std::vector<Move> RoundPlanner::plan(const CompletionState& st, std::uint32_t target, std::mt19937_64& rng) {
  const Rank n = n_;
  const Rank s_rank = n - 1;
  const std::uint32_t t = st.rounds();
  const bool exchanging = t < n - 1;
  const std::uint32_t start_rounds = tail_rounds(n);
  const std::int64_t left = static_cast<std::int64_t>(target) - t;

  for (Rank r = 0; r < n; ++r) {
    can_send_[r] = 1;
    can_recv_[r] = r != s_rank;
    dst_of_[r] = -1;
    src_of_[r] = -1;
  }
  if (exchanging) {
    can_send_[t] = can_recv_[t] = 0;
    can_send_[s_rank] = 0;
  }
  // During the doubling start, ranks about to exchange must stay empty: while they exchange
  // they cannot forward anything they received.
  for (Rank r = t + 1; r <= start_rounds && r < s_rank; ++r) can_recv_[r] = 0;

  // Chunks in flight get slots in priority order: fewest holders first, then the newest.
  chunks_ = st.in_flight();
  std::sort(chunks_.begin(), chunks_.end(), [&](std::uint32_t a, std::uint32_t b) {
    const auto ha = st.holder_count(a), hb = st.holder_count(b);
    return ha != hb ? ha < hb : a > b;
  });
  words_ = (chunks_.size() + 63) / 64;
  held_.assign(static_cast<std::size_t>(n) * words_, 0);
  valid_.assign(words_, 0);
  conflict_.assign(n, 0);
  for (std::size_t i = 0; i < chunks_.size(); ++i) {
    const std::uint64_t bit = std::uint64_t{1} << (i % 64);
    valid_[i / 64] |= bit;
    const bool young = 2 * st.holder_count(chunks_[i]) <= n;
    for (const Rank r : st.holders(chunks_[i])) {
      held_[r * words_ + i / 64] |= bit;
      if (young) ++conflict_[r];
    }
  }
  const auto critical = [&](Rank r) { return static_cast<std::int64_t>(st.missing(r)) >= left; };
  // Receivers that must receive now come first; then ranks holding fewer young chunks (they can
  // forward this one next round); the next exchanger last (it will be busy).
  const auto last_key = static_cast<std::uint32_t>(chunks_.size() + 2);
  for (Rank r = 0; r < s_rank; ++r) {
    order_key_[r] = critical(r) ? 0 : r == t + 1 ? last_key : 1 + conflict_[r];
  }

  for (std::size_t i = 0; i < chunks_.size(); ++i) {
    const std::uint64_t bit = std::uint64_t{1} << (i % 64);
    receivers_.clear();
    for (Rank r = 0; r < s_rank; ++r) {
      if (can_recv_[r] && src_of_[r] < 0 && !(held_[r * words_ + i / 64] & bit)) receivers_.push_back(r);
    }
    if (receivers_.empty()) continue;
    senders_.clear();
    for (const Rank r : st.holders(chunks_[i])) {
      if (can_send_[r] && dst_of_[r] < 0) senders_.push_back(r);
    }
    const std::size_t pairs = std::min(senders_.size(), receivers_.size());
    if (pairs == 0) continue;
    // The best-keyed receivers, ties broken at random, meet randomly chosen senders.
    stable_bucket_sort(receivers_, last_key);
    const std::uint32_t cut_key = order_key_[receivers_[pairs - 1]];
    const auto tie_begin = static_cast<std::size_t>(
        std::find_if(receivers_.begin(), receivers_.end(), [&](Rank r) { return order_key_[r] == cut_key; }) -
        receivers_.begin());
    std::size_t tie_end = pairs;
    while (tie_end < receivers_.size() && order_key_[receivers_[tie_end]] == cut_key) ++tie_end;
    partial_shuffle(receivers_, tie_begin, tie_end, pairs, rng);
    partial_shuffle(senders_, 0, senders_.size(), pairs, rng);
    for (std::size_t k = 0; k < pairs; ++k) {
      dst_of_[senders_[k]] = receivers_[k];
      src_of_[receivers_[k]] = senders_[k];
    }
  }

  // Augmenting paths turn the greedy matching into a maximum one.
  free_holders_.resize(chunks_.size());
  has_free_.assign(words_, 0);
  for (std::size_t i = 0; i < chunks_.size(); ++i) {
    free_holders_[i].clear();
    for (const Rank s : st.holders(chunks_[i])) {
      if (can_send_[s] && dst_of_[s] < 0) free_holders_[i].push_back(s);
    }
    if (!free_holders_[i].empty()) has_free_[i / 64] |= std::uint64_t{1} << (i % 64);
  }
  seen_slots_.assign(words_, 0);
  dead_slots_.assign(words_, 0);
  receivers_.clear();
  for (Rank r = 0; r < s_rank; ++r) {
    if (can_recv_[r] && src_of_[r] < 0) receivers_.push_back(r);
  }
  std::stable_partition(receivers_.begin(), receivers_.end(), critical);
  ++dead_stamp_;
  for (const Rank r : receivers_) {
    bool lacking = false;
    for (std::size_t w = 0; w < words_ && !lacking; ++w) lacking = lacks(r, w) != 0;
    if (lacking) augment(st, r);
  }

  // Each matched pair moves the freshest chunk it can (the lowest slot).
  std::vector<Move> moves;
  for (Rank s = 0; s < n; ++s) {
    if (dst_of_[s] < 0) continue;
    const auto r = static_cast<Rank>(dst_of_[s]);
    std::int64_t slot = -1;
    for (std::size_t w = 0; w < words_ && slot < 0; ++w) {
      const std::uint64_t both = held_[s * words_ + w] & lacks(r, w);
      if (both != 0) slot = static_cast<std::int64_t>(64 * w) + std::countr_zero(both);
    }
    COLLSIM_ASSERT(slot >= 0, fmt::format("stragglar: matched pair {} -> {} has nothing to move", s, r));
    moves.push_back(Move{s, r, chunks_[static_cast<std::size_t>(slot)]});
  }
  return moves;
}

std::uint32_t finish_greedy(CompletionState& state, std::uint32_t target, std::uint64_t seed, Phase* sink) {
  std::mt19937_64 rng(seed);
  RoundPlanner planner(state.n());
  // Every round moves at least one chunk (the straggler holds everything once it stops
  // exchanging), so this bound is never reached by a correct planner.
  const std::uint64_t max_rounds = 4 * static_cast<std::uint64_t>(state.n()) + 64;
  while (!state.done()) {
    COLLSIM_ASSERT(state.rounds() < max_rounds, fmt::format("stragglar: greedy rounds do not finish for n = {}", state.n()));
    const std::uint32_t t = state.rounds();
    const std::vector<Move> moves = planner.plan(state, target, rng);
    std::optional<Rank> exchange;
    if (t < state.num_chunks()) exchange = t;
    COLLSIM_ASSERT(exchange || !moves.empty(), fmt::format("stragglar: greedy round {} moves nothing", t));
    state.apply_round(exchange, moves, sink);
  }
  return state.rounds();
}

void build_greedy(Rank n, Phase& phase) {
  const std::uint32_t target = target_rounds(n);
  // Restarts pay off most for small n; a single attempt costs about n^2 log n.
  const std::uint32_t attempts = n <= 64 ? 16 : n <= 256 ? 6 : n <= 2048 ? 3 : 2;
  std::uint32_t best_rounds = std::numeric_limits<std::uint32_t>::max();
  for (std::uint32_t a = 0; a < attempts && best_rounds > target; ++a) {
    Phase trial(phase.name());
    trial.reserve(static_cast<std::size_t>(n) * (n - 1));
    CompletionState state(n);
    const std::uint32_t rounds = finish_greedy(state, target, kGreedySeed + a, &trial);
    if (rounds < best_rounds) {
      best_rounds = rounds;
      phase = std::move(trial);
    }
  }
}

}  // namespace collsim::stragglar
