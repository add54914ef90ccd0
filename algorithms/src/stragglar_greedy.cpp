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
      seen_chunk_(n, 0),
      dead_(n, 0),
      dead_chunk_(n, 0),
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

bool RoundPlanner::augment(const CompletionState& st, Rank root, std::span<const std::uint32_t> chunks) {
  ++stamp_;
  queue_.assign(1, root);
  seen_receiver_[root] = stamp_;
  visited_.clear();
  for (std::size_t qi = 0; qi < queue_.size(); ++qi) {
    const Rank r = queue_[qi];
    for (const std::uint32_t c : chunks) {
      // Once a chunk's holders have all been visited in this search, nobody reaches new senders
      // through it: skipping it keeps a search linear in the holder lists.
      if (seen_chunk_[c] == stamp_ || dead_chunk_[c] == dead_stamp_ || st.has(r, c)) continue;
      seen_chunk_[c] = stamp_;
      for (const Rank s : st.holders(c)) {
        if (!can_send_[s] || seen_sender_[s] == stamp_ || dead_[s] == dead_stamp_) continue;
        seen_sender_[s] = stamp_;
        visited_.push_back(s);
        parent_[s] = r;
        if (dst_of_[s] < 0) {
          for (Rank x = s;;) {
            const Rank to = parent_[x];
            const std::int64_t previous = src_of_[to];
            dst_of_[x] = to;
            src_of_[to] = x;
            if (to == root) break;
            x = static_cast<Rank>(previous);
          }
          ++dead_stamp_;  // the matching changed: senders written off earlier may help again
          return true;
        }
        const auto next = static_cast<Rank>(dst_of_[s]);
        if (seen_receiver_[next] != stamp_) {
          seen_receiver_[next] = stamp_;
          queue_.push_back(next);
        }
      }
    }
  }
  // No augmenting path through these senders (nor through the chunks whose holders were all
  // visited) while the matching stays as it is.
  for (const Rank s : visited_) dead_[s] = dead_stamp_;
  for (const std::uint32_t c : chunks) {
    if (seen_chunk_[c] == stamp_) dead_chunk_[c] = dead_stamp_;
  }
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

  chunks_ = st.in_flight();
  std::sort(chunks_.begin(), chunks_.end(), [&](std::uint32_t a, std::uint32_t b) {
    const auto ha = st.holder_count(a), hb = st.holder_count(b);
    return ha != hb ? ha < hb : a > b;
  });
  conflict_.assign(n, 0);
  for (const std::uint32_t c : chunks_) {
    if (2 * st.holder_count(c) > n) continue;
    for (const Rank r : st.holders(c)) ++conflict_[r];
  }
  const auto critical = [&](Rank r) { return static_cast<std::int64_t>(st.missing(r)) >= left; };
  // Receivers that must receive now come first; then ranks holding fewer young chunks (they can
  // forward this one next round); the next exchanger last (it will be busy).
  const auto last_key = static_cast<std::uint32_t>(chunks_.size() + 2);
  for (Rank r = 0; r < s_rank; ++r) {
    order_key_[r] = critical(r) ? 0 : r == t + 1 ? last_key : 1 + conflict_[r];
  }

  for (const std::uint32_t c : chunks_) {
    senders_.clear();
    for (const Rank r : st.holders(c)) {
      if (can_send_[r] && dst_of_[r] < 0) senders_.push_back(r);
    }
    if (senders_.empty()) continue;
    receivers_.clear();
    for (Rank r = 0; r < s_rank; ++r) {
      if (can_recv_[r] && src_of_[r] < 0 && !st.has(r, c)) receivers_.push_back(r);
    }
    shuffle(senders_, rng);
    shuffle(receivers_, rng);
    stable_bucket_sort(receivers_, last_key);
    const std::size_t pairs = std::min(senders_.size(), receivers_.size());
    for (std::size_t i = 0; i < pairs; ++i) {
      dst_of_[senders_[i]] = receivers_[i];
      src_of_[receivers_[i]] = senders_[i];
    }
  }

  receivers_.clear();
  for (Rank r = 0; r < s_rank; ++r) {
    if (can_recv_[r] && src_of_[r] < 0) receivers_.push_back(r);
  }
  std::stable_partition(receivers_.begin(), receivers_.end(), critical);
  ++dead_stamp_;
  for (const Rank r : receivers_) {
    const bool lacks = std::any_of(chunks_.begin(), chunks_.end(), [&](std::uint32_t c) { return !st.has(r, c); });
    if (lacks) augment(st, r, chunks_);
  }

  std::vector<Move> moves;
  for (Rank s = 0; s < n; ++s) {
    if (dst_of_[s] < 0) continue;
    const auto r = static_cast<Rank>(dst_of_[s]);
    const auto it = std::find_if(chunks_.begin(), chunks_.end(),
                                 [&](std::uint32_t c) { return st.has(s, c) && !st.has(r, c); });
    COLLSIM_ASSERT(it != chunks_.end(), fmt::format("stragglar: matched pair {} -> {} has nothing to move", s, r));
    moves.push_back(Move{s, r, *it});
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
  // Restarts only pay off for small n; for large n a single attempt already takes n^2 log n.
  const std::uint32_t attempts = n <= 64 ? 16 : n <= 256 ? 6 : n <= 1024 ? 3 : 1;
  std::uint64_t best_seed = 0;
  std::uint32_t best_rounds = 0;
  for (std::uint32_t a = 0; a < attempts; ++a) {
    CompletionState trial(n);
    const std::uint32_t rounds = finish_greedy(trial, target, kGreedySeed + a, nullptr);
    if (a == 0 || rounds < best_rounds) {
      best_rounds = rounds;
      best_seed = kGreedySeed + a;
    }
    if (best_rounds <= target) break;
  }
  CompletionState state(n);
  finish_greedy(state, target, best_seed, &phase);
}

}  // namespace collsim::stragglar
