#include "collsim/algorithms/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "collsim/models/error.hpp"

namespace collsim {

const char* op_name(Op op) { return op == Op::Copy ? "copy" : "reduce"; }

std::span<const Transfer> Phase::round(std::size_t r) const {
  COLLSIM_ASSERT(r < round_begin_.size(), fmt::format("round {} of {}", r, round_begin_.size()));
  const std::size_t begin = round_begin_[r];
  return std::span<const Transfer>(transfers_).subspan(begin, round_begin(r + 1) - begin);
}

void Phase::add(Rank src, Rank dst, std::uint32_t chunk_begin, std::uint32_t chunk_count, Op op) {
  if (round_begin_.empty()) {
    throw ScheduleError(fmt::format("phase '{}': add() before begin_round()", name_));
  }
  if (chunk_count == 0 || chunk_count > std::numeric_limits<std::uint16_t>::max()) {
    throw ScheduleError(fmt::format("phase '{}': chunk_count {} is outside 1..65535", name_,
                                    chunk_count));
  }
  if (transfers_.size() >= std::numeric_limits<std::uint32_t>::max()) {
    throw ScheduleError(fmt::format("phase '{}': more than 2^32 transfers", name_));
  }
  transfers_.push_back(Transfer{src, dst, chunk_begin, static_cast<std::uint16_t>(chunk_count), op});
}

void Phase::trim_empty_rounds() {
  while (!round_begin_.empty() && round_begin_.back() == transfers_.size()) round_begin_.pop_back();
}

void Phase::relabel(std::span<const Rank> new_rank_of) {
  // Ranks past the permutation (switch ranks) keep their ids.
  const auto rename = [&new_rank_of](Rank r) { return r < new_rank_of.size() ? new_rank_of[r] : r; };
  for (auto& t : transfers_) {
    t.src = rename(t.src);
    t.dst = rename(t.dst);
  }
}

Phase& Schedule::add_phase(std::string name) {
  phases.emplace_back(std::move(name));
  return phases.back();
}

std::size_t Schedule::num_rounds() const {
  std::size_t total = 0;
  for (const auto& p : phases) total += p.num_rounds();
  return total;
}

std::size_t Schedule::num_transfers() const {
  std::size_t total = 0;
  for (const auto& p : phases) total += p.num_transfers();
  return total;
}

void Schedule::relabel(std::span<const Rank> new_rank_of) {
  if (new_rank_of.size() != n) {
    throw ScheduleError(fmt::format("relabel: permutation has {} entries for n = {}",
                                    new_rank_of.size(), n));
  }
  std::vector<bool> seen(n, false);
  for (Rank r : new_rank_of) {
    if (r >= n || seen[r]) throw ScheduleError("relabel: not a permutation of 0..n-1");
    seen[r] = true;
  }
  for (auto& p : phases) {
    // Transfers reference ranks < n only if the schedule is well formed; the verifier reports
    // out-of-range ranks, so relabelling must not index out of bounds on a broken schedule.
    for (const auto& t : p.transfers()) {
      if (t.src >= num_ranks() || t.dst >= num_ranks()) {
        throw ScheduleError("relabel: transfer with a rank >= n + num_switch_ranks");
      }
    }
    p.relabel(new_rank_of);
  }
  if (straggler >= 0) straggler = new_rank_of[static_cast<std::size_t>(straggler)];
}

std::size_t Schedule::memory_bytes() const {
  std::size_t bytes = sizeof(Schedule);
  for (const auto& p : phases) {
    bytes += p.num_transfers() * sizeof(Transfer) + p.num_rounds() * sizeof(std::uint32_t);
  }
  return bytes;
}

std::vector<Rank> participants(const Phase& phase, Rank n) {
  std::vector<bool> used(n, false);
  for (const auto& t : phase.transfers()) {
    if (t.src < n) used[t.src] = true;
    if (t.dst < n) used[t.dst] = true;
  }
  std::vector<Rank> ranks;
  for (Rank r = 0; r < n; ++r) {
    if (used[r]) ranks.push_back(r);
  }
  return ranks;
}

}  // namespace collsim
