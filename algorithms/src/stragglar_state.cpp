// Bookkeeping of the StragglAR completion phase: which rank holds which fully reduced chunk,
// with the invariant checks every construction relies on.
#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "collsim/models/error.hpp"
#include "stragglar_internal.hpp"

namespace collsim::stragglar {

std::uint32_t tail_rounds(Rank n) {
  return static_cast<std::uint32_t>(std::bit_width(n - 1)) - 1;  // ceil(log2 n) - 1 for n >= 2
}

std::uint32_t target_rounds(Rank n) { return n == 2 ? 1 : (n - 1) + tail_rounds(n); }

CompletionState::CompletionState(Rank n)
    : n_(n),
      words_((static_cast<std::size_t>(n) - 1 + 63) / 64),
      bits_(static_cast<std::size_t>(n) * words_, 0),
      count_(n - 1, 0),
      missing_(n, n - 1),
      holders_(n - 1),
      sent_stamp_(n, 0),
      recv_stamp_(n, 0) {}

void CompletionState::gain(Rank r, std::uint32_t c) {
  bits_[static_cast<std::size_t>(r) * words_ + (c >> 6)] |= std::uint64_t{1} << (c & 63);
  --missing_[r];
  holders_[c].push_back(r);
  if (++count_[c] == n_) {
    ++complete_;
    // A complete chunk is never forwarded again; dropping its list keeps memory at O(n log n).
    std::vector<Rank>().swap(holders_[c]);
    in_flight_.erase(std::find(in_flight_.begin(), in_flight_.end(), c));
  }
}

void CompletionState::apply_round(std::optional<Rank> exchange, std::span<const Move> moves,
                                  Phase* sink) {
  const std::uint32_t stamp = ++rounds_;
  const Rank s = straggler();
  const auto use_port = [&](std::vector<std::uint32_t>& stamps, Rank r, const char* what) {
    COLLSIM_ASSERT(stamps[r] != stamp, fmt::format("stragglar round {}: rank {} {} twice", stamp - 1, r, what));
    stamps[r] = stamp;
  };
  if (sink) sink->begin_round();
  if (exchange) {
    const Rank g = *exchange;
    COLLSIM_ASSERT(g < s && count_[g] == 0, fmt::format("stragglar: bad exchange of chunk {}", g));
    use_port(sent_stamp_, g, "sends");
    use_port(recv_stamp_, g, "receives");
    use_port(sent_stamp_, s, "sends");
    use_port(recv_stamp_, s, "receives");
    if (sink) {
      sink->add(g, s, g, 1, Op::Reduce);
      sink->add(s, g, g, 1, Op::Reduce);
    }
  }
  for (const Move& m : moves) {
    COLLSIM_ASSERT(m.src < n_ && m.dst < n_ && m.src != m.dst && m.chunk < num_chunks(),
                   fmt::format("stragglar round {}: malformed copy {} -> {} chunk {}", stamp - 1, m.src, m.dst, m.chunk));
    COLLSIM_ASSERT(has(m.src, m.chunk) && !has(m.dst, m.chunk),
                   fmt::format("stragglar round {}: copy {} -> {} of chunk {} is not a fresh fully reduced chunk",
                               stamp - 1, m.src, m.dst, m.chunk));
    use_port(sent_stamp_, m.src, "sends");
    use_port(recv_stamp_, m.dst, "receives");
    if (sink) sink->add(m.src, m.dst, m.chunk, 1, Op::Copy);
  }
  // Snapshot semantics: everything a round delivers becomes usable in the next round.
  if (exchange) {
    in_flight_.push_back(*exchange);
    holders_[*exchange].reserve(n_);
    gain(*exchange, *exchange);
    gain(s, *exchange);
  }
  for (const Move& m : moves) gain(m.dst, m.chunk);
}

}  // namespace collsim::stragglar
