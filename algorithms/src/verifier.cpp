#include "collsim/algorithms/verifier.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace collsim {
namespace {

using Interval = std::pair<std::uint32_t, std::uint32_t>;  // [first, second) of ranks

// A set of ranks as sorted, disjoint, non-adjacent intervals. Every AllReduce we know keeps
// contribution sets contiguous (ring ranges, tree subtrees, aligned blocks), so up to two
// intervals are stored inline; longer lists live in an append-only pool of immutable vectors,
// which makes a copy O(1) and keeps 4096-rank schedules within a few hundred megabytes.
struct RankSet {
  static constexpr std::uint32_t kPooled = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t lo0 = 0, hi0 = 0, lo1 = 0, hi1 = 0;  // hi1 == kPooled: lo0 indexes the pool
};

class SetStore {
 public:
  void load(const RankSet& s, std::vector<Interval>& out) const {
    out.clear();
    if (s.hi1 == RankSet::kPooled) {
      const auto& v = pool_[s.lo0];
      out.assign(v.begin(), v.end());
      return;
    }
    if (s.hi0 > s.lo0) out.emplace_back(s.lo0, s.hi0);
    if (s.hi1 > s.lo1) out.emplace_back(s.lo1, s.hi1);
  }
  RankSet store(const std::vector<Interval>& v) {
    RankSet s;
    if (v.size() > 2) {
      s.lo0 = static_cast<std::uint32_t>(pool_.size());
      s.hi1 = RankSet::kPooled;
      pool_.push_back(v);
      return s;
    }
    if (!v.empty()) { s.lo0 = v[0].first; s.hi0 = v[0].second; }
    if (v.size() == 2) { s.lo1 = v[1].first; s.hi1 = v[1].second; }
    return s;
  }

 private:
  std::vector<std::vector<Interval>> pool_;
};

// Merges two sorted interval lists; returns false if they overlap.
bool merge_disjoint(const std::vector<Interval>& a, const std::vector<Interval>& b,
                    std::vector<Interval>& out) {
  out.clear();
  bool disjoint = true;
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    Interval next;
    if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
      next = a[i++];
    } else {
      next = b[j++];
    }
    if (!out.empty() && next.first < out.back().second) {
      disjoint = false;
      out.back().second = std::max(out.back().second, next.second);
    } else if (!out.empty() && next.first == out.back().second) {
      out.back().second = next.second;
    } else {
      out.push_back(next);
    }
  }
  return disjoint;
}

bool is_subset(const std::vector<Interval>& small, const std::vector<Interval>& big) {
  std::size_t j = 0;
  for (const auto& iv : small) {
    while (j < big.size() && big[j].second <= iv.first) ++j;
    if (j == big.size() || big[j].first > iv.first || big[j].second < iv.second) return false;
  }
  return true;
}

std::string describe(const std::vector<Interval>& v) {
  std::string s = "{";
  for (const auto& [lo, hi] : v) {
    if (s.size() > 1) s += ",";
    s += hi == lo + 1 ? fmt::format("{}", lo) : fmt::format("{}..{}", lo, hi - 1);
  }
  return s + "}";
}

class Verifier {
 public:
  Verifier(const Schedule& s, std::size_t max_diagnostics)
      : s_(s), max_(max_diagnostics), sends_(s.n, 0), recvs_(s.n, 0), stamp_(s.n, 0) {}

  std::vector<Diagnostic> run() {
    if (s_.n < 2) {
      report(kNone, kNone, fmt::format("n = {} (an AllReduce needs at least 2 ranks)", s_.n));
      return std::move(diags_);
    }
    if (s_.num_chunks == 0) {
      report(kNone, kNone, "num_chunks is 0");
      return std::move(diags_);
    }
    if (s_.ports == 0) report(kNone, kNone, "ports is 0: no rank may send or receive");
    // Switch ranks (schedule.hpp) start with empty sets: they hold no data of their own.
    state_.resize(static_cast<std::size_t>(s_.num_ranks()) * s_.num_chunks);
    multicast_.assign(static_cast<std::size_t>(s_.num_switch_ranks) * s_.num_chunks, false);
    for (Rank r = 0; r < s_.n; ++r) {
      for (std::uint32_t c = 0; c < s_.num_chunks; ++c) at(r, c) = RankSet{r, r + 1, 0, 0};
    }
    for (std::size_t p = 0; p < s_.phases.size() && !full(); ++p) {
      const Phase& phase = s_.phases[p];
      for (std::size_t r = 0; r < phase.num_rounds() && !full(); ++r) run_round(p, r, phase.round(r));
    }
    if (!full()) check_final();
    return std::move(diags_);
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  struct Pending {
    Rank dst;
    std::uint32_t chunk;
    RankSet value;
    std::size_t transfer;  // index within the round, for messages
    bool accumulate = false;  // a contribution a switch adds in flight (value = what is added)
  };

  RankSet& at(Rank r, std::uint32_t c) { return state_[static_cast<std::size_t>(r) * s_.num_chunks + c]; }
  // Whether switch rank `sw` has sent chunk c since the last contribution to it.
  std::vector<bool>::reference multicast(Rank sw, std::uint32_t c) {
    return multicast_[static_cast<std::size_t>(sw - s_.n) * s_.num_chunks + c];
  }
  bool full() const { return diags_.size() >= max_; }
  void report(std::size_t phase, std::size_t round, std::string msg) {
    if (!full()) diags_.push_back(Diagnostic{phase, round, std::move(msg)});
  }

  void run_round(std::size_t p, std::size_t r, std::span<const Transfer> round) {
    ++round_id_;
    pending_.clear();
    for (std::size_t i = 0; i < round.size(); ++i) {
      const Transfer& t = round[i];
      // Built only when something is reported: this loop runs for every simulated transfer.
      const auto where = [&t] {
        return fmt::format("transfer {} -> {} chunks [{}, {})", t.src, t.dst, t.chunk_begin,
                           t.chunk_begin + t.chunk_count);
      };
      if (t.src >= s_.num_ranks() || t.dst >= s_.num_ranks()) {
        report(p, r, fmt::format("{}: rank out of range 0..{}", where(), s_.num_ranks() - 1));
        continue;
      }
      if (t.src == t.dst) {
        report(p, r, fmt::format("{}: a rank sends to itself", where()));
        continue;
      }
      if (const std::string why = switch_rule_broken(t); !why.empty()) {
        report(p, r, fmt::format("{}: {}", where(), why));
        continue;
      }
      if (t.chunk_count == 0 ||
          static_cast<std::uint64_t>(t.chunk_begin) + t.chunk_count > s_.num_chunks) {
        report(p, r, fmt::format("{}: chunk range outside 0..{}", where(), s_.num_chunks - 1));
        continue;
      }
      count_port(sends_, t.src, p, r, "sends");
      count_port(recvs_, t.dst, p, r, "receives");
      if (s_.is_switch(t.src)) {
        for (std::uint32_t c = t.chunk_begin; c < t.chunk_begin + t.chunk_count; ++c) multicast(t.src, c) = true;
      }
      if (s_.is_switch(t.dst)) {
        // Contributions to a switch are summed when the round ends, all of them together.
        for (std::uint32_t c = t.chunk_begin; c < t.chunk_begin + t.chunk_count; ++c) {
          pending_.push_back(Pending{t.dst, c, at(t.src, c), i, true});
        }
        continue;
      }
      for (std::uint32_t c = t.chunk_begin; c < t.chunk_begin + t.chunk_count; ++c) {
        if (const auto fast = fast_path(t.op, at(t.src, c), at(t.dst, c))) {
          pending_.push_back(Pending{t.dst, c, *fast, i});
          continue;
        }
        store_.load(at(t.src, c), src_);
        store_.load(at(t.dst, c), dst_);
        if (t.op == Op::Reduce) {
          if (!merge_disjoint(src_, dst_, merged_)) {
            report(p, r, fmt::format("{}: reduce double-counts chunk {}: rank {} holds {} and receives {}",
                                     where(), c, t.dst, describe(dst_), describe(src_)));
          }
          pending_.push_back(Pending{t.dst, c, store_.store(merged_), i});
        } else {
          if (!is_subset(dst_, src_)) {
            report(p, r, fmt::format("{}: copy of chunk {} discards contributions: rank {} holds {} and is overwritten with {}",
                                     where(), c, t.dst, describe(dst_), describe(src_)));
          }
          pending_.push_back(Pending{t.dst, c, at(t.src, c), i});
        }
      }
    }
    // Writes land at the end of the round (snapshot semantics); two writes to one cell conflict.
    // A switch adds every contribution of the round to what it holds (the one exception).
    std::stable_sort(pending_.begin(), pending_.end(), [](const Pending& a, const Pending& b) {
      return a.dst != b.dst ? a.dst < b.dst : a.chunk < b.chunk;
    });
    for (std::size_t i = 0; i < pending_.size(); ++i) {
      if (pending_[i].accumulate) {
        accumulate(p, r, pending_[i]);
        continue;
      }
      if (i > 0 && pending_[i].dst == pending_[i - 1].dst && pending_[i].chunk == pending_[i - 1].chunk) {
        report(p, r, fmt::format("rank {} chunk {} is written by two transfers in one round",
                                 pending_[i].dst, pending_[i].chunk));
        continue;
      }
      at(pending_[i].dst, pending_[i].chunk) = pending_[i].value;
    }
  }

  // Nearly every set any AllReduce builds is one contiguous interval; handle two such sets
  // without touching the interval vectors (this loop runs once per chunk of every transfer).
  // Returns nothing when the slow path must decide, including every case that is an error.
  static std::optional<RankSet> fast_path(Op op, const RankSet& src, const RankSet& dst) {
    const auto single = [](const RankSet& set) { return set.hi1 == 0 && set.lo1 == 0 && set.hi0 > set.lo0; };
    if (!single(src) || !single(dst)) return std::nullopt;
    if (op == Op::Copy) {
      if (dst.lo0 >= src.lo0 && dst.hi0 <= src.hi0) return src;
      return std::nullopt;
    }
    if (dst.hi0 == src.lo0) return RankSet{dst.lo0, src.hi0, 0, 0};
    if (src.hi0 == dst.lo0) return RankSet{src.lo0, dst.hi0, 0, 0};
    if (dst.hi0 < src.lo0) return RankSet{dst.lo0, dst.hi0, src.lo0, src.hi0};
    if (src.hi0 < dst.lo0) return RankSet{src.lo0, src.hi0, dst.lo0, dst.hi0};
    return std::nullopt;  // overlap: double counting, reported by the slow path
  }

  // The rules of schedule.hpp for transfers that touch a switch rank; "" if `t` keeps them.
  std::string switch_rule_broken(const Transfer& t) const {
    if (s_.is_switch(t.src) && s_.is_switch(t.dst)) return "two switch ranks exchange data";
    if (s_.is_switch(t.dst) && t.op != Op::Reduce) return "a GPU sends to a switch rank with copy (only reduce)";
    if (s_.is_switch(t.src) && t.op != Op::Copy) return "a switch rank sends with reduce (only copy: a multicast)";
    return "";
  }

  void accumulate(std::size_t p, std::size_t r, const Pending& in) {
    RankSet& cell = at(in.dst, in.chunk);
    // The switch stores nothing once it has multicast a chunk: the next contribution starts a new sum.
    if (multicast(in.dst, in.chunk)) {
      multicast(in.dst, in.chunk) = false;
      cell = RankSet{};
    }
    store_.load(cell, dst_);
    store_.load(in.value, src_);
    if (!merge_disjoint(src_, dst_, merged_)) {
      report(p, r, fmt::format("switch rank {} chunk {} receives contributions {} it already holds {}: "
                               "a double contribution", in.dst, in.chunk, describe(src_), describe(dst_)));
    }
    cell = store_.store(merged_);
  }

  void count_port(std::vector<std::uint32_t>& count, Rank rank, std::size_t p, std::size_t r,
                  const char* verb) {
    if (rank >= s_.n) return;  // switch ranks have no port limit
    if (stamp_[rank] != round_id_) {
      stamp_[rank] = round_id_;
      sends_[rank] = 0;
      recvs_[rank] = 0;
    }
    if (++count[rank] == s_.ports + 1) {
      report(p, r, fmt::format("rank {} {} more than {} transfer(s) in one round (port limit)",
                               rank, verb, s_.ports));
    }
  }

  void check_final() {
    std::size_t wrong = 0;
    for (Rank r = 0; r < s_.n; ++r) {
      for (std::uint32_t c = 0; c < s_.num_chunks; ++c) {
        store_.load(at(r, c), src_);
        if (src_.size() == 1 && src_[0].first == 0 && src_[0].second == s_.n) continue;
        if (++wrong <= 5) {
          report(kNone, kNone, fmt::format("at the end rank {} chunk {} holds contributions {} instead of all {} ranks",
                                           r, c, describe(src_), s_.n));
        }
      }
    }
    if (wrong > 5) report(kNone, kNone, fmt::format("... {} (rank, chunk) pairs are incomplete in all", wrong));
  }

  const Schedule& s_;
  std::size_t max_;
  std::vector<Diagnostic> diags_;
  std::vector<RankSet> state_;
  std::vector<bool> multicast_;  // per (switch rank, chunk): see multicast()
  SetStore store_;
  std::vector<Pending> pending_;
  std::vector<Interval> src_, dst_, merged_;
  std::vector<std::uint32_t> sends_, recvs_, stamp_;
  std::uint32_t round_id_ = 0;
};

}  // namespace

std::vector<Diagnostic> verify_schedule(const Schedule& schedule, std::size_t max_diagnostics) {
  return Verifier(schedule, max_diagnostics).run();
}

std::string format_diagnostic(const Schedule& schedule, const Diagnostic& d) {
  if (d.phase >= schedule.phases.size()) return d.message;
  return fmt::format("phase '{}' round {}: {}", schedule.phases[d.phase].name(), d.round, d.message);
}

}  // namespace collsim
