// StragglAR completion rounds for n that is not a power of two: a cyclic construction (our own)
// that keeps every non-straggler sending and receiving exactly one chunk in every round between
// the doubling start and the last exchange, so the whole schedule reaches n - 2 + ceil(log2 n)
// rounds whenever the greedy ending finishes in time (it did for every n we tested).
//
// The pattern is the same in every round relative to the round number t: chunk c = t - j is at
// step j of its spread; element b of a chunk (the rank c + b, mod N = n-1) receives it at step
// s(b). Rank t + y (relative position y) receives in round t exactly the chunks with
// b - s(b) = y, and holds the chunks with b - j = y, s(b) < j. In interval terms every element
// b with s(b) < J is an interval [b - J + 1, b - s(b)] of relative positions:
//
//     positions:  ... y-2  y-1   y   y+1 ...
//     element b:        [ holds holds recv ]        s(b) = J - 3, J = last step
//
// Each rank receives once per round iff the intervals cover every position the same number of
// times p (and start at distinct positions); it sends once per round iff each position (the
// exchanger excepted) can pick one of its p held chunks so that step j gets exactly as many
// senders as it has new elements: a small bipartite flow. We choose a profile that doubles up
// to 2^m holders (m = ceil(log2 n) - 1; the forced part, whose "tails" must not overlap) and
// then fills the rest over p - 1 more steps, lay the intervals out greedily (long ones in
// decreasing length, overlapping by one where coverage allows, single ones in tails), join
// them with short intervals by a sweep, and solve the flow with Dinic's algorithm. Rounds where
// a chunk would be negative simply omit it, which gives the doubling start; after the last
// exchange the greedy planner finishes the chunks still in flight (it has exactly the slack
// the count n - 2 + ceil(log2 n) leaves).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <deque>
#include <limits>

#include "collsim/models/error.hpp"
#include "stragglar_internal.hpp"

namespace collsim::stragglar {
namespace {

// Largest coverage tried: the layout costs O(N p^2) and the flow O(N p sqrt(N)); n just above a
// power of two would need p near n and is left to the greedy planner (it has slack there).
constexpr std::uint32_t kMaxCoverage = 64;
constexpr std::uint32_t kExtraCoverage = 3;  // p above the minimum that is still tried
constexpr std::uint32_t kEndingAttempts = 4;

class Flow {
 public:
  explicit Flow(std::size_t nodes) : adj_(nodes), level_(nodes), next_(nodes) {}
  void add(std::uint32_t from, std::uint32_t to, std::int32_t cap) {
    adj_[from].push_back(static_cast<std::uint32_t>(edges_.size()));
    edges_.push_back(Edge{to, cap});
    adj_[to].push_back(static_cast<std::uint32_t>(edges_.size()));
    edges_.push_back(Edge{from, 0});
  }
  std::int64_t max_flow(std::uint32_t source, std::uint32_t sink) {
    std::int64_t total = 0;
    while (bfs(source, sink)) {
      std::fill(next_.begin(), next_.end(), 0);
      while (const std::int32_t f = dfs(source, sink, std::numeric_limits<std::int32_t>::max())) total += f;
    }
    return total;
  }
  /// The node that `from` sends its unit of flow to, or -1.
  std::int64_t used_target(std::uint32_t from) const {
    for (const std::uint32_t e : adj_[from]) {
      if (e % 2 == 0 && edges_[e].cap == 0) return edges_[e].to;
    }
    return -1;
  }

 private:
  struct Edge {
    std::uint32_t to;
    std::int32_t cap;
  };
  bool bfs(std::uint32_t source, std::uint32_t sink) {
    std::fill(level_.begin(), level_.end(), -1);
    std::vector<std::uint32_t> queue{source};
    level_[source] = 0;
    for (std::size_t i = 0; i < queue.size(); ++i) {
      for (const std::uint32_t e : adj_[queue[i]]) {
        if (edges_[e].cap > 0 && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[queue[i]] + 1;
          queue.push_back(edges_[e].to);
        }
      }
    }
    return level_[sink] >= 0;
  }
  // Recursion depth is the path length, at most 4 here (source, position, step, sink).
  std::int32_t dfs(std::uint32_t u, std::uint32_t sink, std::int32_t limit) {
    if (u == sink) return limit;
    for (std::uint32_t& i = next_[u]; i < adj_[u].size(); ++i) {
      Edge& e = edges_[adj_[u][i]];
      if (e.cap <= 0 || level_[e.to] != level_[u] + 1) continue;
      if (const std::int32_t f = dfs(e.to, sink, std::min(limit, e.cap))) {
        e.cap -= f;
        edges_[adj_[u][i] ^ 1].cap += f;
        return f;
      }
    }
    return 0;
  }
  std::vector<Edge> edges_;
  std::vector<std::vector<std::uint32_t>> adj_;
  std::vector<std::int32_t> level_;
  std::vector<std::uint32_t> next_;
};

// The per-round pattern: in round t, for every step j, rank t + senders[j][i] sends chunk t - j
// to rank (t - j) + receivers[j][i] (all mod N).
struct Design {
  std::uint32_t steps = 0;  // J
  std::vector<std::vector<std::uint32_t>> senders, receivers;
};

// An interval of relative positions [start, start + length) of one element.
struct Interval {
  std::int64_t start;
  std::uint32_t length;
};

class LayoutBuilder {
 public:
  LayoutBuilder(Rank n, std::uint32_t coverage)
      : chunks_(n - 1),
        m_(tail_rounds(n)),
        slack_((std::int64_t{1} << (m_ + 1)) - n),
        p_(coverage),
        steps_(m_ + coverage),
        core_cover_(n - 1, 0),
        core_start_(n - 1, 0) {}

  bool build(bool lazy_sweep, Design& out) {
    return place_cores() && check_long_coverage() && join_with_shorts(lazy_sweep) && solve(out);
  }

 private:
  // A core is the part of a long interval from its head's last position on, [l, e]; element
  // level k (joining at step k <= m) has a core of length m - k + 1. Cores cover every position
  // once plus `slack_` positions twice; a core's positions after its first ("tail") are forced
  // sends, so two tails must never overlap: cores may only overlap at a core's first position.
  struct Core {
    std::int64_t first;
    std::uint32_t length;
    std::uint32_t level;
  };

  std::size_t at(std::int64_t y) const {
    const auto n = static_cast<std::int64_t>(chunks_);
    return static_cast<std::size_t>(((y % n) + n) % n);
  }
  // Positions covered by long intervals (cores plus the p-1 head positions before each core).
  std::uint32_t long_cover(std::int64_t y) const {
    std::uint32_t v = core_cover_[at(y)];
    for (std::uint32_t i = 1; i < p_; ++i) v += core_start_[at(y + i)];
    return v;
  }
  bool window_ok(std::int64_t from, std::int64_t to) const {
    for (std::int64_t y = from; y <= to; ++y) {
      if (long_cover(y) > p_) return false;
    }
    return true;
  }
  void add_core(const Core& c) {
    for (std::int64_t y = c.first; y < c.first + c.length; ++y) ++core_cover_[at(y)];
    ++core_start_[at(c.first)];
    cores_.push_back(c);
  }
  void remove_start(std::int64_t y) {
    --core_cover_[at(y)];
    --core_start_[at(y)];
  }

  bool place_cores() {
    const std::int64_t m = m_;
    add_core(Core{-m, m_ + 1, 0});  // element 0, the exchanger's own chunk
    std::int64_t pos = 1;
    std::int64_t overlaps = 0;
    std::uint32_t previous_length = m_ + 1;
    for (std::uint32_t k = 1; k + 1 <= m_; ++k) {
      const std::uint32_t length = m_ - k + 1;
      for (std::uint32_t i = 0; i < (std::uint32_t{1} << (k - 1)); ++i) {
        std::int64_t first = pos;
        const bool not_first = k > 1 || i > 0;
        if (overlaps < slack_ && previous_length >= 2 && length >= 2 && not_first) {
          ++core_cover_[at(pos - 1)];
          ++core_start_[at(pos - 1)];
          const bool ok = window_ok(pos - p_, pos - 1);
          remove_start(pos - 1);
          if (ok) {
            first = pos - 1;
            ++overlaps;
          }
        }
        add_core(Core{first, length, k});
        if (!window_ok(first - (p_ - 1), first - 1)) return false;
        previous_length = length;
        pos = first + length;
      }
    }
    const std::int64_t units = std::int64_t{1} << (m_ - 1);
    const std::int64_t hosted_needed = slack_ - overlaps;
    if (hosted_needed > units) return false;
    const std::int64_t run = units - hosted_needed;
    if (pos + run != static_cast<std::int64_t>(chunks_) - m) return false;
    for (std::int64_t y = pos; y < pos + run; ++y) add_core(Core{y, 1, m_});
    // The remaining single-position cores sit inside tails, where they double the coverage.
    std::int64_t hosted = 0;
    const std::size_t long_cores = cores_.size();
    for (std::size_t ci = 0; ci < long_cores && hosted < hosted_needed; ++ci) {
      const Core c = cores_[ci];
      if (c.length < 2) continue;
      for (std::int64_t x = c.first + 1; x < c.first + c.length - 1 && hosted < hosted_needed; ++x) {
        if (core_cover_[at(x)] != 1 || core_start_[at(x)] != 0) continue;
        ++core_cover_[at(x)];
        ++core_start_[at(x)];
        if (!window_ok(x - (p_ - 1), x)) {
          remove_start(x);
          continue;
        }
        cores_.push_back(Core{x, 1, m_});
        ++hosted;
      }
    }
    return hosted == hosted_needed;
  }

  // Long interval of a core: p-1 head positions, then the core. Its first position is a
  // "sink" (some interval must end just before it), its end + 1 a "source".
  bool check_long_coverage() {
    is_sink_.assign(chunks_, 0);
    is_source_.assign(chunks_, 0);
    for (const Core& c : cores_) {
      const std::size_t sink = at(c.first - (p_ - 1));
      const std::size_t source = at(c.first + c.length);
      if (is_sink_[sink] || is_source_[source]) return false;
      is_sink_[sink] = is_source_[source] = 1;
    }
    for (std::size_t y = 0; y < chunks_; ++y) {
      if (long_cover(static_cast<std::int64_t>(y)) > p_) return false;
    }
    // cut_[y]: long intervals containing both y-1 and y.
    cut_.assign(chunks_, 0);
    for (const Core& c : cores_) {
      for (std::int64_t y = c.first - (p_ - 1) + 1; y < c.first + c.length; ++y) ++cut_[at(y)];
    }
    return true;
  }

  // The coverage missing from p is filled with short intervals (length 1..p-1), which chain each
  // long interval's end to a later long interval's start. Sweep once around the cycle moving
  // "tokens" (open chains) forward, at most p-1 positions per hop, each position used once.
  bool join_with_shorts(bool lazy) {
    const auto n = static_cast<std::int64_t>(chunks_);
    std::int64_t origin = -1;
    std::uint32_t open = 0;
    for (std::int64_t y = 0; y < n && origin < 0; ++y) {
      const std::uint32_t k = p_ - cut_[at(y)];
      bool free = true;
      for (std::uint32_t i = 1; i <= k && free; ++i) free = !is_sink_[at(y - i)] && !is_source_[at(y - i)];
      if (free) {
        origin = y;
        open = k;
      }
    }
    if (origin < 0) return false;
    std::deque<std::int64_t> tokens;
    for (std::uint32_t i = open; i >= 1; --i) tokens.push_back(origin - i);
    shorts_.clear();
    const auto hop = [&](std::int64_t y) {
      shorts_.push_back(Interval{tokens.front(), static_cast<std::uint32_t>(y - tokens.front())});
      tokens.pop_front();
    };
    for (std::int64_t y = origin; y < origin + n; ++y) {
      const bool must_hop = !tokens.empty() && tokens.front() == y - (p_ - 1);
      if (!tokens.empty() && tokens.front() < y - (p_ - 1)) return false;
      const bool source = is_source_[at(y)], sink = is_sink_[at(y)];
      if (source && sink) {
        if (must_hop) return false;
      } else if (sink) {
        if (tokens.empty()) return false;
        hop(y);
      } else if (source) {
        if (must_hop) return false;
        tokens.push_back(y);
      } else if (!tokens.empty() && (!lazy || must_hop || y >= origin + n - open)) {
        hop(y);
        tokens.push_back(y);
      }
    }
    if (tokens.size() != open) return false;
    for (std::uint32_t i = 0; i < open; ++i) {
      if (at(tokens[i]) != at(origin - open + i)) return false;
    }
    return true;
  }

  bool solve(Design& out) {
    const std::uint32_t n = chunks_;
    const std::uint32_t steps = steps_;
    // Element b = (interval start + J - 1) joins at step J - length.
    std::vector<std::uint32_t> join(n, steps);
    std::vector<Interval> intervals;
    for (const Core& c : cores_) intervals.push_back(Interval{c.first - (p_ - 1), steps - c.level});
    for (const Interval& s : shorts_) {
      if (s.length < 1 || s.length >= p_) return false;
      intervals.push_back(s);
    }
    std::vector<std::uint32_t> cover(n, 0);
    for (const Interval& iv : intervals) {
      const std::size_t b = at(iv.start + steps - 1);
      if (join[b] != steps) return false;
      join[b] = steps - iv.length;
      for (std::uint32_t o = 0; o < iv.length; ++o) ++cover[at(iv.start + o)];
    }
    if (join[0] != 0) return false;
    if (std::any_of(cover.begin(), cover.end(), [&](std::uint32_t v) { return v != p_; })) return false;
    std::vector<std::uint32_t> joining(steps + 1, 0);
    for (const std::uint32_t s : join) ++joining[s];

    // Flow: position z (z = y + 1, y the relative rank) -> offset o of a covering interval
    // (its send happens at step J - o) -> sink with capacity = new elements of that step.
    const std::uint32_t exchanger = 1 % n;
    const std::uint32_t source = n + steps, sink = n + steps + 1;
    Flow flow(n + steps + 2);
    for (std::uint32_t z = 0; z < n; ++z) {
      if (z != exchanger) flow.add(source, z, 1);
    }
    for (const Interval& iv : intervals) {
      for (std::uint32_t o = 0; o < iv.length; ++o) {
        const auto z = static_cast<std::uint32_t>(at(iv.start + o));
        if (z != exchanger) flow.add(z, n + o, 1);
      }
    }
    for (std::uint32_t o = 0; o < steps; ++o) {
      const std::uint32_t demand = joining[steps - o];
      if (demand > 0) flow.add(n + o, sink, static_cast<std::int32_t>(demand));
    }
    if (flow.max_flow(source, sink) != static_cast<std::int64_t>(n) - 1) return false;

    out.steps = steps;
    out.senders.assign(steps + 1, {});
    out.receivers.assign(steps + 1, {});
    for (std::uint32_t z = 0; z < n; ++z) {
      if (z == exchanger) continue;
      const std::int64_t target = flow.used_target(z);
      if (target < n) return false;
      const auto step = steps - static_cast<std::uint32_t>(target - n);
      out.senders[step].push_back(static_cast<std::uint32_t>(at(std::int64_t{z} - 1)));
    }
    for (std::uint32_t b = 1; b < n; ++b) out.receivers[join[b]].push_back(b);
    for (std::uint32_t j = 0; j <= steps; ++j) {
      if (out.senders[j].size() != out.receivers[j].size() && j > 0) return false;
    }
    return true;
  }

  std::uint32_t chunks_;
  std::uint32_t m_;
  std::int64_t slack_;  // 2^(m+1) - n: how far n is below the next power of two
  std::uint32_t p_;
  std::uint32_t steps_;
  std::vector<std::uint32_t> core_cover_, core_start_;
  std::vector<Core> cores_;
  std::vector<std::uint8_t> is_sink_, is_source_;
  std::vector<std::uint32_t> cut_;
  std::vector<Interval> shorts_;
};

bool find_design(Rank n, Design& out) {
  const Rank chunks = n - 1;
  const std::uint32_t m = tail_rounds(n);
  if (std::has_single_bit(n) || m < 2) return false;
  const std::int64_t slack = (std::int64_t{1} << (m + 1)) - n;
  const std::int64_t room = static_cast<std::int64_t>(chunks) - (std::int64_t{1} << m);
  if (room <= 0) return false;
  // The p-1 steps after the doubling deliver to N - 2^m elements each round at most, and the
  // total shortfall against pure doubling is exactly `slack`.
  const auto minimum = static_cast<std::uint32_t>(1 + (slack + room - 1) / room);
  for (std::uint32_t p = std::max<std::uint32_t>(2, minimum); p <= minimum + kExtraCoverage && p <= kMaxCoverage; ++p) {
    for (const bool lazy : {false, true}) {
      if (LayoutBuilder(n, p).build(lazy, out)) return true;
    }
  }
  return false;
}

}  // namespace

bool build_cyclic(Rank n, Phase& phase) {
  Design design;
  if (!find_design(n, design)) return false;
  const Rank chunks = n - 1;
  CompletionState state(n);
  std::vector<Move> moves;
  moves.reserve(n);
  for (Rank t = 0; t < chunks; ++t) {
    moves.clear();
    for (std::uint32_t j = 1; j <= design.steps && j <= t; ++j) {
      const Rank c = t - j;
      const auto& senders = design.senders[j];
      const auto& receivers = design.receivers[j];
      for (std::size_t i = 0; i < senders.size(); ++i) {
        moves.push_back(Move{(t + senders[i]) % chunks, (c + receivers[i]) % chunks, c});
      }
    }
    state.apply_round(t, moves, &phase);
  }
  // Try a few seeds for the greedy ending on copies (it is short), then replay the best.
  const std::uint32_t target = target_rounds(n);
  std::uint64_t best_seed = kGreedySeed;
  std::uint32_t best_rounds = std::numeric_limits<std::uint32_t>::max();
  for (std::uint32_t a = 0; a < kEndingAttempts && best_rounds > target; ++a) {
    CompletionState trial = state;
    const std::uint32_t rounds = finish_greedy(trial, target, kGreedySeed + a, nullptr);
    if (rounds < best_rounds) {
      best_rounds = rounds;
      best_seed = kGreedySeed + a;
    }
  }
  finish_greedy(state, target, best_seed, &phase);
  return true;
}

}  // namespace collsim::stragglar
