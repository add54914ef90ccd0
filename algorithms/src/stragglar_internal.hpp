// Internals of the StragglAR completion phase, shared by stragglar*.cpp (not a public header).
//
// Conventions used throughout: n ranks, straggler S = n-1, N = n-1 chunks, non-straggler g owns
// chunk g after the ReduceScatter. Completion round t < N contains the straggler exchange of
// chunk t (rank t <-> S, the only reductions); every other transfer copies one fully reduced
// chunk. "Holder" of chunk c always means a rank holding c fully reduced.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "collsim/algorithms/schedule.hpp"

namespace collsim::stragglar {

/// One copy of a fully reduced chunk.
struct Move {
  Rank src = 0;
  Rank dst = 0;
  std::uint32_t chunk = 0;
};

/// ceil(log2 n) - 1: the number of completion rounds after the last exchange in the optimum
/// (the exchanged chunk has 2 holders and needs n), so the target is N + this.
std::uint32_t tail_rounds(Rank n);

/// The round count every construction aims for: n - 2 + ceil(log2 n) (n >= 3), 1 for n = 2.
std::uint32_t target_rounds(Rank n);

/// Who holds which fully reduced chunk after the completion rounds applied so far. Copyable, so
/// trial continuations can run on a copy. Memory: n * N bits plus holder lists of the chunks
/// still in flight.
class CompletionState {
 public:
  explicit CompletionState(Rank n);

  Rank n() const { return n_; }
  Rank straggler() const { return n_ - 1; }
  std::uint32_t num_chunks() const { return n_ - 1; }
  std::uint32_t rounds() const { return rounds_; }
  bool done() const { return complete_ == num_chunks(); }

  bool has(Rank r, std::uint32_t c) const {
    return (bits_[static_cast<std::size_t>(r) * words_ + (c >> 6)] >> (c & 63)) & 1U;
  }
  /// Holders of chunk c, the straggler included.
  std::uint32_t holder_count(std::uint32_t c) const { return count_[c]; }
  /// Ranks holding chunk c, valid while c is in flight (exchanged, not yet everywhere).
  const std::vector<Rank>& holders(std::uint32_t c) const { return holders_[c]; }
  /// Chunks rank r still has to receive (its own included until its exchange).
  std::uint32_t missing(Rank r) const { return missing_[r]; }
  /// Exchanged chunks that some rank still lacks, in no particular order.
  const std::vector<std::uint32_t>& in_flight() const { return in_flight_; }

  /// Applies one round: the exchange of chunk `exchange` (if any) and the copies. Checks the
  /// one-port limit, that every source holds its chunk and no destination has it yet (throws
  /// InternalError otherwise: a generator bug). Appends the transfers to `sink` if given.
  void apply_round(std::optional<Rank> exchange, std::span<const Move> moves, Phase* sink);

 private:
  void gain(Rank r, std::uint32_t c);

  Rank n_;
  std::size_t words_;
  std::uint32_t rounds_ = 0;
  std::uint32_t complete_ = 0;
  std::vector<std::uint64_t> bits_;
  std::vector<std::uint32_t> count_;
  std::vector<std::uint32_t> missing_;
  std::vector<std::vector<Rank>> holders_;
  std::vector<std::uint32_t> in_flight_;
  std::vector<std::uint32_t> sent_stamp_, recv_stamp_;
};

/// Moves a uniformly random selection of elements of v[begin, end) into v[begin, until), in
/// random order (a partial Fisher-Yates shuffle; our own because std::shuffle's algorithm differs
/// between standard libraries and results must not).
template <class T>
void partial_shuffle(std::vector<T>& v, std::size_t begin, std::size_t end, std::size_t until, std::mt19937_64& rng) {
  for (std::size_t i = begin; i < until && i + 1 < end; ++i) std::swap(v[i], v[i + rng() % (end - i)]);
}

/// Plans round `state.rounds()` greedily: the straggler exchange of that round (if any) plus a
/// maximum set of copies (one send and one receive per rank) found by augmenting paths, biased
/// towards the chunks with the fewest holders and towards ranks that could otherwise not finish
/// by `target` rounds. Returns the copies; the exchange is implied by the round number.
class RoundPlanner {
 public:
  explicit RoundPlanner(Rank n);
  std::vector<Move> plan(const CompletionState& state, std::uint32_t target, std::mt19937_64& rng);

 private:
  // Chunks in flight live in "slots" 0..A-1 (priority order); per-rank bit masks over slots make
  // "what can s give r" a few word operations.
  std::uint64_t lacks(Rank r, std::size_t word) const { return ~held_[r * words_ + word] & valid_[word]; }
  bool augment(const CompletionState& state, Rank root);
  // An unmatched sender holding a slot r lacks, or -1.
  std::int64_t free_sender_for(Rank r);
  // Stable sort of ranks by order_key_ (keys 0..max_key): counting sort, keys are small.
  void stable_bucket_sort(std::vector<Rank>& ranks, std::uint32_t max_key);

  Rank n_;
  std::vector<std::int64_t> dst_of_, src_of_;  // current matching, -1 = free
  std::vector<std::uint8_t> can_send_, can_recv_;
  std::vector<std::uint32_t> seen_sender_, seen_receiver_, dead_;
  std::uint32_t stamp_ = 0, dead_stamp_ = 0;
  std::vector<Rank> queue_, visited_, parent_;
  std::vector<Rank> senders_, receivers_, sorted_;
  std::vector<std::uint32_t> chunks_, conflict_, order_key_, bucket_start_;
  std::size_t words_ = 0;
  std::vector<std::uint64_t> held_, valid_, has_free_, seen_slots_, dead_slots_;
  std::vector<std::vector<Rank>> free_holders_;  // per slot: unmatched holders
};

/// Seed of the first greedy attempt; attempt a uses kGreedySeed + a (results are reproducible).
inline constexpr std::uint64_t kGreedySeed = 0x5354524147474c52ULL;

/// Runs RoundPlanner rounds from `state` until every rank holds every chunk, appending them to
/// `sink` if given. Deterministic for a given seed. Returns the total round count.
std::uint32_t finish_greedy(CompletionState& state, std::uint32_t target, std::uint64_t seed, Phase* sink);

/// Power-of-two n >= 4: the GF(2^L) construction, exactly n - 2 + log2 n rounds.
void build_power_of_two(Rank n, Phase& phase);

/// Other n: the cyclic construction where it exists. Returns false (phase untouched) if no
/// layout was found for this n.
bool build_cyclic(Rank n, Phase& phase);

/// Any n >= 3: greedy rounds from scratch, best of a few seeded attempts.
void build_greedy(Rank n, Phase& phase);

}  // namespace collsim::stragglar
