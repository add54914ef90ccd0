// The replay engine (model and paths described in replay_engine.hpp).
#include "collsim/sim/replay_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <queue>

#include "collsim/models/error.hpp"
#include "collsim/sim/run_checks.hpp"
#include "due_heap.hpp"

namespace collsim {
namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();
// A link binds when its flows' caps exceed its capacity by more than this (relative): rounding
// in a sum of caps must not make an exactly full link look congested.
constexpr double kBindTolerance = 1e-12;
// Completions this close after the current date (seconds) happen at it; SimGrid's engine merges
// events 1e-15 s apart the same way. (Past ~8 s of simulated time now + 1e-15 == now: only exact
// ties merge there, which is also what SimGrid's absolute precision does.)
constexpr double kDateTolerance_s = 1e-15;

// Per-link numbers in flat arrays: the hot loops touch nothing else.
struct LinkTable {
  std::vector<double> bandwidth_Bps;
  std::vector<double> latency_s;
  std::vector<std::uint8_t> binding;

  explicit LinkTable(const Topology& topo) {
    const std::size_t count = topo.links.size();
    bandwidth_Bps.resize(count);
    latency_s.resize(count);
    binding.resize(count);
    for (std::size_t l = 0; l < count; ++l) {
      bandwidth_Bps[l] = topo.links[l].bandwidth_Bps;
      latency_s[l] = topo.links[l].latency_s;
      binding[l] = topo.never_binding(static_cast<std::uint32_t>(l)) ? 0 : 1;
    }
  }
};

struct Job {
  const Schedule& schedule;
  const Topology& topo;
  const LinkTable& links;
  std::vector<double> arrival_s;
  std::vector<double> gate_s;     // per phase
  double chunk_bytes = 0;
  double gamma_s_per_byte = 0;
  bool record_trace = false;
  bool prune_links = true;  // ReplayOptions::prune_links
};

bool transfer_ok(const Schedule& s, const Transfer& t) {
  return t.src < s.n && t.dst < s.n && t.src != t.dst &&
         static_cast<std::uint64_t>(t.chunk_begin) + t.chunk_count <= s.num_chunks;
}

// ---------------------------------------------------------------------------------------------
// One sweep in round order. Exact when no binding link ever carries two flows at once, which
// holds when links are owned by one endpoint and no round uses a binding link twice: a rank
// only starts its next round after all transfers of the current one finished. Returns false
// (and leaves `out` unspecified) as soon as a round uses a binding link twice.
bool run_fast(const Job& job, RunResult& out) {
  const Schedule& s = job.schedule;
  const LinkTable& L = job.links;
  // ready: when the rank reached the round it is in; done: when everything it did so far ended.
  std::vector<double> ready(job.arrival_s);
  std::vector<double> done(job.arrival_s);
  std::vector<std::uint32_t> rank_round(s.n, kNone);
  std::vector<std::uint32_t> link_round(L.bandwidth_Bps.size(), kNone);
  std::vector<std::uint32_t> route;
  route.reserve(8);
  const double gamma = job.gamma_s_per_byte;
  std::uint32_t round_id = 0;
  for (std::size_t p = 0; p < s.phases.size(); ++p) {
    const Phase& phase = s.phases[p];
    const double gate = job.gate_s[p];
    for (std::size_t r = 0; r < phase.num_rounds(); ++r, ++round_id) {
      for (const Transfer& t : phase.round(r)) {
        if (!transfer_ok(s, t)) check_transfer(s, t, p, r);
        job.topo.route_into(t.src, t.dst, route);
        double latency = 0;
        double bottleneck = kInf;
        for (std::uint32_t l : route) {
          latency += L.latency_s[l];
          bottleneck = std::min(bottleneck, L.bandwidth_Bps[l]);
          if (L.binding[l] == 0) continue;
          if (link_round[l] == round_id) return false;
          link_round[l] = round_id;
        }
        for (Rank e : {t.src, t.dst}) {
          if (rank_round[e] != round_id) {
            ready[e] = done[e];
            rank_round[e] = round_id;
          }
        }
        const double start = std::max(std::max(ready[t.src], ready[t.dst]), gate);
        const double bytes = t.chunk_count * job.chunk_bytes;
        // The same operation order as a flow simulator: latency first, then the bytes.
        const double arrived = bytes > 0 ? (start + latency) + bytes / bottleneck : start + latency;
        const double applied = t.op == Op::Reduce ? arrived + bytes * gamma : arrived;
        done[t.src] = std::max(done[t.src], arrived);
        done[t.dst] = std::max(done[t.dst], applied);
        if (job.record_trace) {
          out.trace.push_back(TransferRecord{static_cast<std::uint32_t>(p), static_cast<std::uint32_t>(r), t, start, applied});
        }
      }
    }
  }
  out.finish_s = std::move(done);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Event-driven path: ranks walk through their own rounds; a transfer starts at the rendezvous,
// waits for its route latency, then becomes a flow whose rate is the max-min fair share over
// its links. Rates are recomputed once per simulated date, for the flows tied to what changed
// through links that bind at that moment (see reshare()).
class EventSim {
 public:
  explicit EventSim(const Job& job) : job_(job), s_(job.schedule), L_(job.links) { build_rank_lists(); }

  void run(RunResult& out);

 private:
  static constexpr std::size_t kMaxRoute = 8;

  enum class Kind : std::uint8_t { RankArrives, Activate, Applied };
  struct Event {
    double t;
    std::uint64_t seq;  // FIFO among equal times, so runs are deterministic
    std::uint32_t id;
    Kind kind;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };

  struct InFlight {
    std::uint32_t transfer = 0;  // global index (schedule order)
    std::uint32_t round = 0;     // global round id
    double start_s = 0;
    double bytes = 0;
    double remaining = 0;
    double rate = 0;
    double old_rate = 0;         // rate before the reshare in progress
    double last_s = 0;           // when `remaining` was last brought up to date
    double bottleneck_Bps = 0;
    double penalty = 1;          // sharing penalty: the route latency, or 1 when it is 0 (CM02)
    std::uint32_t seen = 0;      // component-search epoch
    std::uint32_t num_links = 0; // links that can ever bind (LinkTable::binding) only
    bool fixed = false;
    std::array<std::uint32_t, kMaxRoute> link{};
    std::array<std::uint32_t, kMaxRoute> pos{};  // index of this flow in link_flows_[link[i]]
  };

  struct RoundRef {
    std::uint32_t phase;
    std::uint32_t round;
  };

  void build_rank_lists();
  const Transfer& transfer(std::uint32_t g, std::uint32_t round) const {
    const std::uint32_t p = rounds_[round].phase;
    return s_.phases[p].transfers()[g - phase_first_[p]];
  }
  void push(double t, Kind kind, std::uint32_t id) {
    events_.push(Event{t, seq_++, id, kind});
  }
  void enter(Rank r, std::uint64_t rank_round, double t);
  void start(std::uint32_t g, std::uint32_t round, double t);
  void activate(std::uint32_t slot, double now);
  void complete(std::uint32_t slot, double now);
  void data_arrived(std::uint32_t slot, double now);
  void applied(std::uint32_t slot, double now);
  void one_done(Rank r, double now);
  void mark_dirty(const std::uint32_t* links, std::uint32_t count);
  void reshare(double now);
  bool can_bind(std::uint32_t l) const;

  const Job& job_;
  const Schedule& s_;
  const LinkTable& L_;

  std::vector<RoundRef> rounds_;
  std::vector<std::uint64_t> phase_first_;
  // Rank r's rounds are rank-rounds [rr_begin_[r], rr_begin_[r+1]); rank-round k is global
  // round rr_round_[k] with transfers rank_xfers_[rr_xfer_[k] .. rr_xfer_[k+1]).
  std::vector<std::uint64_t> rr_begin_;
  std::vector<std::uint32_t> rr_round_;
  std::vector<std::uint64_t> rr_xfer_;
  std::vector<std::uint32_t> rank_xfers_;

  std::vector<std::uint64_t> cur_rr_;
  std::vector<std::uint32_t> cur_round_;  // kNone before arrival and after the last round
  std::vector<std::uint32_t> pending_;
  std::vector<double> finish_;

  std::vector<InFlight> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::vector<std::vector<std::uint32_t>> link_flows_;
  std::vector<std::uint32_t> link_seen_;
  std::vector<std::uint8_t> link_binds_;  // can_bind() as of the link's last change of flows
  std::vector<double> cap_;
  std::vector<std::uint32_t> unfixed_;
  std::vector<double> usage_;  // per link: sum of 1 / penalty over its unfixed flows
  std::uint32_t epoch_ = 0;
  // Links whose flows changed since the last reshare; the shares are recomputed once per
  // simulated date, after every event of that date (dirty_flag_ marks membership).
  std::vector<std::uint32_t> dirty_links_;
  std::vector<std::uint8_t> dirty_flag_;
  std::vector<std::uint32_t> started_;  // flows that became active since the last reshare
  std::vector<std::uint8_t> bound_before_;  // per dirty link: link_binds_ before this reshare
  // Progressive filling's flows by the level at which their cap stops them.
  std::vector<std::pair<double, std::uint32_t>> caps_;
  std::vector<std::uint32_t> comp_links_;
  std::vector<std::uint32_t> comp_flows_;
  std::vector<std::uint32_t> stack_;
  std::vector<std::uint32_t> route_;

  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  detail::DueHeap due_;  // flows moving bytes, by completion date
  std::uint64_t seq_ = 0;
  std::vector<std::pair<std::uint32_t, TransferRecord>> records_;
  std::uint64_t finished_transfers_ = 0;
};

void EventSim::build_rank_lists() {
  const Rank n = s_.n;
  const std::uint64_t total = s_.num_transfers();
  if (total >= kNone) {
    throw ConfigError(fmt::format("replay: {} transfers exceed the event-driven path's limit of 2^32", total));
  }
  std::vector<std::uint64_t> xfers_of(n + 1, 0);
  std::vector<std::uint64_t> rounds_of(n + 1, 0);
  std::vector<std::uint32_t> last(n, kNone);
  std::uint64_t g = 0;
  for (std::size_t p = 0; p < s_.phases.size(); ++p) {
    phase_first_.push_back(g);
    const Phase& phase = s_.phases[p];
    for (std::size_t r = 0; r < phase.num_rounds(); ++r) {
      const auto round_id = static_cast<std::uint32_t>(rounds_.size());
      rounds_.push_back(RoundRef{static_cast<std::uint32_t>(p), static_cast<std::uint32_t>(r)});
      for (const Transfer& t : phase.round(r)) {
        check_transfer(s_, t, p, r);
        for (Rank e : {t.src, t.dst}) {
          ++xfers_of[e];
          if (last[e] != round_id) {
            last[e] = round_id;
            ++rounds_of[e];
          }
        }
        ++g;
      }
    }
  }
  // Prefix sums turn counts into begin offsets.
  std::uint64_t xsum = 0;
  std::uint64_t rsum = 0;
  std::vector<std::uint64_t> x_cursor(n);
  std::vector<std::uint64_t> r_cursor(n);
  rr_begin_.assign(n + 1, 0);
  for (Rank r = 0; r < n; ++r) {
    x_cursor[r] = xsum;
    r_cursor[r] = rsum;
    rr_begin_[r] = rsum;
    xsum += xfers_of[r];
    rsum += rounds_of[r];
  }
  rr_begin_[n] = rsum;
  rank_xfers_.resize(xsum);
  rr_round_.resize(rsum);
  rr_xfer_.resize(rsum + 1);
  rr_xfer_[rsum] = xsum;
  std::fill(last.begin(), last.end(), kNone);
  g = 0;
  std::uint32_t round_id = 0;
  for (const Phase& phase : s_.phases) {
    for (std::size_t r = 0; r < phase.num_rounds(); ++r, ++round_id) {
      for (const Transfer& t : phase.round(r)) {
        for (Rank e : {t.src, t.dst}) {
          if (last[e] != round_id) {
            last[e] = round_id;
            rr_round_[r_cursor[e]] = round_id;
            rr_xfer_[r_cursor[e]] = x_cursor[e];
            ++r_cursor[e];
          }
          rank_xfers_[x_cursor[e]++] = static_cast<std::uint32_t>(g);
        }
        ++g;
      }
    }
  }
}

void EventSim::run(RunResult& out) {
  const Rank n = s_.n;
  cur_rr_.assign(n, 0);
  cur_round_.assign(n, kNone);
  pending_.assign(n, 0);
  finish_ = job_.arrival_s;
  const std::size_t num_links = L_.bandwidth_Bps.size();
  link_flows_.assign(num_links, {});
  link_seen_.assign(num_links, 0);
  link_binds_.assign(num_links, 0);
  cap_.assign(num_links, 0.0);
  unfixed_.assign(num_links, 0);
  usage_.assign(num_links, 0.0);
  dirty_flag_.assign(num_links, 0);
  for (Rank r = 0; r < n; ++r) push(job_.arrival_s[r], Kind::RankArrives, r);

  double now = -kInf;
  for (;;) {
    // Shares change only between dates: every event of one date is applied first, then the
    // flows they touched are re-shared once (events at one date are frequent: a round's
    // transfers start together, and flows with equal shares finish together).
    // Flow completions live in their own indexed heap (due_); at equal dates the other events
    // go first. A flow due within kDateTolerance_s of the current date completes at it: flows
    // that finish together in exact arithmetic then finish together despite rounding, as in
    // SimGrid (surf/precision). It matters: on a congested fabric a flow that ends a rounding
    // error before its peers starts its next round alone, gets more bandwidth and gains twice
    // the lead there; over dozens of rounds a 1e-18 s difference grows into microseconds.
    const double next_event = events_.empty() ? kInf : events_.top().t;
    double next_due = due_.empty() ? kInf : due_.top_date();
    if (next_due > now && next_due <= now + kDateTolerance_s) next_due = now;
    const double next = std::min(next_event, next_due);
    if ((!dirty_links_.empty() || !started_.empty()) && next > now) {
      reshare(now);
      continue;
    }
    if (next == kInf) break;
    now = next;
    if (next_event > next_due) {
      const std::uint32_t slot = due_.top_id();
      due_.erase(slot);
      complete(slot, now);
      continue;
    }
    const Event ev = events_.top();
    events_.pop();
    switch (ev.kind) {
      case Kind::RankArrives:
        if (rr_begin_[ev.id] < rr_begin_[ev.id + 1]) enter(ev.id, rr_begin_[ev.id], ev.t);
        break;
      case Kind::Activate: activate(ev.id, ev.t); break;
      case Kind::Applied: applied(ev.id, ev.t); break;
    }
  }
  COLLSIM_ASSERT(finished_transfers_ == s_.num_transfers(),
                 fmt::format("replay: {} of {} transfers finished", finished_transfers_, s_.num_transfers()));
  out.finish_s = std::move(finish_);
  if (job_.record_trace) {
    std::sort(records_.begin(), records_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    out.trace.reserve(records_.size());
    for (auto& rec : records_) out.trace.push_back(rec.second);
  }
}

void EventSim::enter(Rank r, std::uint64_t k, double t) {
  cur_rr_[r] = k;
  const std::uint32_t round = rr_round_[k];
  cur_round_[r] = round;
  pending_[r] = static_cast<std::uint32_t>(rr_xfer_[k + 1] - rr_xfer_[k]);
  for (std::uint64_t i = rr_xfer_[k]; i < rr_xfer_[k + 1]; ++i) {
    const std::uint32_t g = rank_xfers_[i];
    const Transfer& tr = transfer(g, round);
    const Rank partner = tr.src == r ? tr.dst : tr.src;
    // The partner entered this round earlier and could not start the transfer without us.
    if (cur_round_[partner] == round) start(g, round, t);
  }
}

void EventSim::start(std::uint32_t g, std::uint32_t round, double t) {
  const Transfer& tr = transfer(g, round);
  std::uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  InFlight& f = slots_[slot];
  f.transfer = g;
  f.round = round;
  f.start_s = std::max(t, job_.gate_s[rounds_[round].phase]);
  f.bytes = tr.chunk_count * job_.chunk_bytes;
  f.remaining = f.bytes;
  f.rate = 0;
  f.fixed = false;
  job_.topo.route_into(tr.src, tr.dst, route_);
  double latency = 0;
  f.bottleneck_Bps = kInf;
  f.num_links = 0;
  for (std::uint32_t l : route_) {
    latency += L_.latency_s[l];
    f.bottleneck_Bps = std::min(f.bottleneck_Bps, L_.bandwidth_Bps[l]);
    if (L_.binding[l] == 0) continue;
    COLLSIM_ASSERT(f.num_links < kMaxRoute, "route longer than kMaxRoute");
    f.link[f.num_links++] = l;
  }
  f.penalty = latency > 0 ? latency : 1.0;
  push(f.start_s + latency, Kind::Activate, slot);
}

void EventSim::activate(std::uint32_t slot, double now) {
  InFlight& f = slots_[slot];
  if (f.bytes <= 0) {
    data_arrived(slot, now);
    return;
  }
  f.last_s = now;
  if (f.num_links == 0) {
    f.rate = f.bottleneck_Bps;
    due_.set(slot, now + f.bytes / f.rate);
    return;
  }
  for (std::uint32_t i = 0; i < f.num_links; ++i) {
    auto& flows = link_flows_[f.link[i]];
    f.pos[i] = static_cast<std::uint32_t>(flows.size());
    flows.push_back(slot);
  }
  mark_dirty(f.link.data(), f.num_links);
  started_.push_back(slot);
}

void EventSim::complete(std::uint32_t slot, double now) {
  InFlight& f = slots_[slot];
  for (std::uint32_t i = 0; i < f.num_links; ++i) {
    auto& flows = link_flows_[f.link[i]];
    const std::uint32_t moved = flows.back();
    flows[f.pos[i]] = moved;
    // The flow moved into our place must learn its new position on this link.
    InFlight& m = slots_[moved];
    for (std::uint32_t j = 0; j < m.num_links; ++j) {
      if (m.link[j] == f.link[i]) m.pos[j] = f.pos[i];
    }
    flows.pop_back();
  }
  mark_dirty(f.link.data(), f.num_links);
  f.num_links = 0;
  data_arrived(slot, now);
}

void EventSim::data_arrived(std::uint32_t slot, double now) {
  const InFlight& f = slots_[slot];
  const Transfer& tr = transfer(f.transfer, f.round);
  const Rank src = tr.src;
  if (tr.op == Op::Reduce && f.bytes > 0 && job_.gamma_s_per_byte > 0) {
    push(now + f.bytes * job_.gamma_s_per_byte, Kind::Applied, slot);
  } else {
    applied(slot, now);
  }
  one_done(src, now);
}

void EventSim::applied(std::uint32_t slot, double now) {
  const InFlight& f = slots_[slot];
  const Transfer& tr = transfer(f.transfer, f.round);
  if (job_.record_trace) {
    const RoundRef ref = rounds_[f.round];
    records_.emplace_back(f.transfer, TransferRecord{ref.phase, ref.round, tr, f.start_s, now});
  }
  ++finished_transfers_;
  const Rank dst = tr.dst;
  free_slots_.push_back(slot);
  one_done(dst, now);
}

void EventSim::one_done(Rank r, double now) {
  COLLSIM_ASSERT(pending_[r] > 0, fmt::format("rank {} completed more transfers than it had", r));
  if (--pending_[r] > 0) return;
  finish_[r] = now;
  const std::uint64_t next = cur_rr_[r] + 1;
  if (next < rr_begin_[r + 1]) {
    enter(r, next, now);
  } else {
    cur_round_[r] = kNone;
  }
}

void EventSim::mark_dirty(const std::uint32_t* links, std::uint32_t count) {
  for (std::uint32_t i = 0; i < count; ++i) {
    if (dirty_flag_[links[i]] == 0) {
      dirty_flag_[links[i]] = 1;
      dirty_links_.push_back(links[i]);
    }
  }
}

// True when link l can limit its flows right now: the flows' own caps (the narrowest link of
// each route) add up to more than its capacity. A link that cannot bind constrains nothing the
// caps do not already constrain, so the max-min allocation is the same without it. On an
// oversubscribed cluster this keeps a GPU's NIC links (one flow each) and every leaf link that
// carries few enough cross-leaf flows out of the sharing: the groups of flows that must be
// re-shared together shrink from every cross-leaf flow to the few leaves that are congested.
bool EventSim::can_bind(std::uint32_t l) const {
  const auto& flows = link_flows_[l];
  if (!job_.prune_links) return !flows.empty();
  if (flows.size() < 2) return false;  // a single flow's cap already includes this link
  double caps = 0;
  for (std::uint32_t slot : flows) caps += slots_[slot].bottleneck_Bps;
  return caps > L_.bandwidth_Bps[l] * (1 + kBindTolerance);
}

// Weighted max-min fair shares by progressive filling, as SimGrid's LMM solver computes them:
// every flow's rate is level / penalty, capped at its route's narrowest link; the link whose
// capacity runs out at the lowest level saturates first and fixes the rates of its flows; their
// bandwidth is removed from their other links; repeat. CM02 sets a flow's penalty to its route
// latency (TCP's RTT unfairness); flows sharing a link on nvswitch, full_mesh and cluster all
// have the same route latency, which makes this plain max-min there.
//
// Only the flows whose rate can have changed are re-shared: those on a dirty link that binds or
// just stopped binding, the flows that just started, and everything connected to them through
// links that bind (can_bind). Flows are taken in the order of the level at which their cap stops
// them (usually one level for all); links by a scan for the smallest share, so a reshare costs
// O(flows x route length + links^2) over the re-shared group, and the group is small: a few
// congested leaves, not the whole fabric. Flows whose rate comes out unchanged keep their queued
// completion (its date cannot move).
void EventSim::reshare(double now) {
  if (++epoch_ == 0) {
    std::fill(link_seen_.begin(), link_seen_.end(), 0);
    for (auto& f : slots_) f.seen = 0;
    epoch_ = 1;
  }
  comp_links_.clear();
  comp_flows_.clear();
  stack_.clear();
  const auto add_flow = [this](std::uint32_t slot) {
    InFlight& f = slots_[slot];
    if (f.seen == epoch_) return;
    f.seen = epoch_;
    comp_flows_.push_back(slot);
    for (std::uint32_t i = 0; i < f.num_links; ++i) {
      const std::uint32_t l = f.link[i];
      if (link_seen_[l] == epoch_) continue;
      link_seen_[l] = epoch_;
      // link_binds_ is current: only a change of its flows can change it, that makes the link
      // dirty, and dirty links were updated (and marked seen) before any flow was taken in.
      if (link_binds_[l] != 0) stack_.push_back(l);
    }
  };
  // A dirty link that binds is re-shared with everything it connects to; one that stopped
  // binding frees its flows, which are re-shared; one that neither binds nor bound changes no
  // rate. Flows that just started are re-shared in any case.
  // Every dirty link's status is brought up to date before any flow is taken in: add_flow reads
  // the status of the other links of the flows it takes in, and those may be dirty too.
  bound_before_.clear();
  for (std::uint32_t l : dirty_links_) {
    dirty_flag_[l] = 0;
    link_seen_[l] = epoch_;
    bound_before_.push_back(link_binds_[l]);
    link_binds_[l] = can_bind(l) ? 1 : 0;
  }
  for (std::size_t i = 0; i < dirty_links_.size(); ++i) {
    const std::uint32_t l = dirty_links_[i];
    if (link_binds_[l] != 0) {
      stack_.push_back(l);
    } else if (bound_before_[i] != 0) {
      for (std::uint32_t slot : link_flows_[l]) add_flow(slot);
    }
  }
  dirty_links_.clear();
  for (std::uint32_t slot : started_) add_flow(slot);
  started_.clear();
  while (!stack_.empty()) {
    const std::uint32_t l = stack_.back();
    stack_.pop_back();
    comp_links_.push_back(l);
    for (std::uint32_t slot : link_flows_[l]) add_flow(slot);
  }
  // Flows by the level at which their cap stops them; links by their current share.
  caps_.clear();
  bool sorted = true;
  std::size_t left = 0;
  for (std::uint32_t slot : comp_flows_) {
    InFlight& f = slots_[slot];
    f.old_rate = f.rate;
    f.fixed = false;
    bool shares_a_link = false;
    for (std::uint32_t i = 0; i < f.num_links; ++i) shares_a_link = shares_a_link || link_binds_[f.link[i]] != 0;
    if (!shares_a_link) {  // nothing but its cap limits it
      f.fixed = true;
      f.rate = f.bottleneck_Bps;
      continue;
    }
    ++left;
    caps_.emplace_back(f.bottleneck_Bps * f.penalty, slot);
    sorted = sorted && (caps_.size() < 2 || caps_[caps_.size() - 2].first <= caps_.back().first);
  }
  // Caps are usually all equal (one kind of link limits every contended flow): no sort then.
  if (!sorted) std::sort(caps_.begin(), caps_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::uint32_t l : comp_links_) {
    cap_[l] = L_.bandwidth_Bps[l];
    unfixed_[l] = static_cast<std::uint32_t>(link_flows_[l].size());
    double usage = 0;
    for (std::uint32_t slot : link_flows_[l]) usage += 1.0 / slots_[slot].penalty;
    usage_[l] = usage;
  }
  const auto fix = [this](InFlight& f, double rate) {
    f.fixed = true;
    f.rate = rate;
    for (std::uint32_t i = 0; i < f.num_links; ++i) {
      const std::uint32_t l = f.link[i];
      if (link_binds_[l] == 0) continue;
      cap_[l] -= rate;
      usage_[l] -= 1.0 / f.penalty;
      --unfixed_[l];
    }
  };
  std::size_t next_cap = 0;
  while (left > 0) {
    std::uint32_t best = kNone;
    double best_share = kInf;
    for (std::uint32_t l : comp_links_) {
      if (unfixed_[l] == 0) continue;
      const double share = cap_[l] / usage_[l];
      if (share < best_share) {
        best_share = share;
        best = l;
      }
    }
    // Every flow whose cap is reached first stops there. Fixing a flow at a rate below every
    // link's share only raises the shares, so all of them go before the links are looked at
    // again.
    bool capped = false;
    for (; next_cap < caps_.size() && caps_[next_cap].first <= best_share; ++next_cap) {
      InFlight& f = slots_[caps_[next_cap].second];
      if (f.fixed) continue;
      fix(f, f.bottleneck_Bps);
      --left;
      capped = true;
    }
    if (capped || left == 0) continue;
    COLLSIM_ASSERT(best != kNone, "progressive filling found no limit for an unfixed flow");
    const double level = std::max(best_share, 0.0);
    const std::size_t left_before = left;
    for (std::uint32_t slot : link_flows_[best]) {
      InFlight& f = slots_[slot];
      if (f.fixed) continue;
      fix(f, std::min(level / f.penalty, f.bottleneck_Bps));
      --left;
    }
    // A link with unfixed flows always fixes one; if not, its counts are wrong and the loop
    // would never end.
    COLLSIM_ASSERT(left < left_before, "progressive filling made no progress");
  }
  for (std::uint32_t slot : comp_flows_) {
    InFlight& f = slots_[slot];
    if (due_.contains(slot) && f.rate == f.old_rate) continue;
    f.remaining = std::max(0.0, f.remaining - f.old_rate * (now - f.last_s));
    f.last_s = now;
    if (f.rate > 0) {
      due_.set(slot, now + f.remaining / f.rate);
    } else {
      due_.erase(slot);
    }
  }
}

}  // namespace

RunResult ReplayEngine::run(const Schedule& schedule, const RunConfig& config) {
  std::vector<double> arrivals = checked_arrivals(schedule, config);
  const Topology& topo = config.topology;
  const LinkTable links(topo);
  Job job{schedule, topo, links, std::move(arrivals), {}, 0.0, topo.link.gamma_s_per_byte, config.record_trace};
  job.gate_s = phase_gates(schedule, job.arrival_s, config.start);
  job.chunk_bytes = config.size_bytes / schedule.num_chunks;
  job.prune_links = options_.prune_links;

  RunResult result;
  result.engine = "replay";
  result.transfers = schedule.num_transfers();
  last_run_fast_ = false;
  if (options_.allow_fast_path && topo.links_owned_by_endpoints()) {
    if (config.record_trace) result.trace.reserve(result.transfers);
    last_run_fast_ = run_fast(job, result);
  }
  if (!last_run_fast_) {
    result.trace.clear();
    EventSim sim(job);
    sim.run(result);
  }
  summarize_run(result, job.arrival_s);
  return result;
}

std::unique_ptr<Engine> make_replay_engine(ReplayOptions options) {
  return std::make_unique<ReplayEngine>(options);
}

}  // namespace collsim
