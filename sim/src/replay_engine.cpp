// The replay engine (model and paths described in replay_engine.hpp).
#include "collsim/sim/replay_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <queue>
#include <type_traits>

#include "collsim/models/error.hpp"
#include "collsim/sim/run_checks.hpp"
#include "execution_core.hpp"
#include "free_list.hpp"
#include "maxmin_network.hpp"
#include "maxmin_network_bundled.hpp"

namespace collsim {
namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();
// Completions this close after the current date (seconds) happen at it; SimGrid's engine merges
// events 1e-15 s apart the same way. (Past ~8 s of simulated time now + 1e-15 == now: only exact
// ties merge there, which is also what SimGrid's absolute precision does.)
constexpr double kDateTolerance_s = 1e-15;

using detail::LinkTable;

struct Job {
  const Schedule& schedule;
  const Topology& topo;
  const LinkTable& links;
  std::vector<double> arrival_s;
  std::vector<double> gate_s;     // per phase
  detail::CostRules rules;
  bool record_trace = false;
  bool prune_links = true;  // ReplayOptions::prune_links
  double reshare_interval_s = 0;  // RunConfig::reshare_interval_s (bundled solver only)
};

// ---------------------------------------------------------------------------------------------
// The contention-free network of the one-sweep path: a transfer takes its route's latency, then
// its bytes at the route's bottleneck. Exact when no binding link ever carries two flows at once,
// which holds when links are owned by one endpoint and no round uses a binding link twice: a rank
// only starts its next round after all transfers of the current one finished. begin_round()
// gives up (the sweep then returns false) as soon as a round uses a binding link twice.
class FastNet {
 public:
  /// `check_links`: give up when a round uses a binding link twice (links owned by endpoints);
  /// false when never_binds() showed that no link can bind in this run.
  FastNet(const Job& job, RunResult& out, bool check_links)
      : job_(job), out_(out), link_round_(job.links.bandwidth_Bps.size(), kNone), check_links_(check_links) {
    route_.reserve(8);
  }

  bool begin_round(std::uint32_t p, std::uint32_t r, std::span<const Transfer> round) {
    const LinkTable& L = job_.links;
    timing_.clear();
    next_ = 0;
    const Schedule& s = job_.schedule;
    for (const Transfer& t : round) {
      // Inline test first: the call that builds the message is for the rare bad transfer.
      if (t.src >= s.num_ranks() || t.dst >= s.num_ranks() || t.src == t.dst ||
          static_cast<std::uint64_t>(t.chunk_begin) + t.chunk_count > s.num_chunks) {
        check_transfer(s, t, p, r);
      }
      job_.topo.route_into(t.src, t.dst, route_);
      Timing timing{0.0, kInf};
      for (const std::uint32_t l : route_) {
        timing.latency_s += L.latency_s[l];
        timing.bottleneck_Bps = std::min(timing.bottleneck_Bps, L.bandwidth_Bps[l]);
        if (L.binding[l] == 0 || !check_links_) continue;
        if (link_round_[l] == round_id_) return false;
        link_round_[l] = round_id_;
      }
      timing_.push_back(timing);
    }
    ++round_id_;
    return true;
  }

  double arrive(const Transfer& t, double start_s) {
    const Timing& timing = timing_[next_++];
    const double bytes = job_.rules.bytes(t);
    // The same operation order as a flow simulator: latency first, then the bytes.
    return bytes > 0 ? (start_s + timing.latency_s) + bytes / timing.bottleneck_Bps : start_s + timing.latency_s;
  }

  void on_transfer(std::uint32_t p, std::uint32_t r, const Transfer& t, double start_s, double applied_s) {
    if (job_.record_trace) out_.trace.push_back(TransferRecord{p, r, t, start_s, applied_s});
  }

 private:
  struct Timing {
    double latency_s;
    double bottleneck_Bps;
  };
  const Job& job_;
  RunResult& out_;
  std::vector<std::uint32_t> link_round_;  // the last round that used each binding link
  std::vector<std::uint32_t> route_;
  std::vector<Timing> timing_;             // this round's transfers, in order
  std::size_t next_ = 0;
  std::uint32_t round_id_ = 0;
  bool check_links_;
};

// Whether no link can ever bind in this run, on a fabric whose links are not all owned by one
// endpoint (an oversubscribed cluster's leaf links, dgx1's forwarding GPUs). Then every flow
// always moves at its cap and the one-sweep path is exact: Ring on a 2:1 cluster, whose few
// cross-leaf flows per leaf never fill a leaf link, needs no max-min sharing at all.
// Why the bound holds: while a transfer is in flight both of its endpoints are in its round, so
// the flows on a link at any moment belong to the current rounds of the ranks it is charged to
// (each transfer on each link charged to one endpoint). If, summed over those ranks, the largest
// caps any one round of theirs puts on the link fit its capacity, no set of concurrent flows can
// exceed it. Links are charged to the sender in the first half of a route and to the receiver in
// the second (a GPU's up links, its leaf's up link; the receiver's down links), so each rank is
// charged with a few links only; past kMaxCharged it gives up (the event path then runs). Either
// end is sound, since both are in the transfer's round: with PXN the forwarding peer's NIC and
// leaf up links fall in the second half and are charged to the receiver.
bool never_binds(const Job& job) {
  constexpr std::size_t kMaxCharged = 32;
  struct Charge {
    std::uint32_t link;
    std::uint32_t round;
    double round_Bps;  // caps on the link in the rank's round `round`
    double max_Bps;    // the largest over the rank's rounds so far
  };
  const Schedule& s = job.schedule;
  const LinkTable& L = job.links;
  std::vector<std::vector<Charge>> charged(s.num_ranks());
  std::vector<double> bound_Bps(L.bandwidth_Bps.size(), 0.0);
  std::vector<std::uint32_t> route;
  std::uint32_t round_id = 0;
  for (std::size_t p = 0; p < s.phases.size(); ++p) {
    const Phase& phase = s.phases[p];
    for (std::size_t r = 0; r < phase.num_rounds(); ++r, ++round_id) {
      for (const Transfer& t : phase.round(r)) {
        if (t.src >= s.num_ranks() || t.dst >= s.num_ranks() || t.src == t.dst ||
            static_cast<std::uint64_t>(t.chunk_begin) + t.chunk_count > s.num_chunks) {
          check_transfer(s, t, p, r);
        }
        job.topo.route_into(t.src, t.dst, route);
        double cap_Bps = kInf;
        for (const std::uint32_t l : route) cap_Bps = std::min(cap_Bps, L.bandwidth_Bps[l]);
        for (std::size_t i = 0; i < route.size(); ++i) {
          const std::uint32_t l = route[i];
          if (L.binding[l] == 0) continue;
          auto& mine = charged[2 * i < route.size() ? t.src : t.dst];
          auto it = std::find_if(mine.begin(), mine.end(), [l](const Charge& c) { return c.link == l; });
          if (it == mine.end()) {
            if (mine.size() == kMaxCharged) return false;
            mine.push_back(Charge{l, round_id, 0.0, 0.0});
            it = mine.end() - 1;
          }
          if (it->round != round_id) {
            it->round = round_id;
            it->round_Bps = 0;
          }
          it->round_Bps += cap_Bps;
          if (it->round_Bps <= it->max_Bps) continue;
          bound_Bps[l] += it->round_Bps - it->max_Bps;
          it->max_Bps = it->round_Bps;
          // No tolerance: a bound at capacity stays within the solver's 1e-12 for any subset.
          if (bound_Bps[l] > L.bandwidth_Bps[l]) return false;
        }
      }
    }
  }
  return true;
}

bool run_fast(const Job& job, RunResult& out, bool check_links) {
  FastNet net(job, out, check_links);
  std::vector<double> ready(job.arrival_s);
  if (!detail::dataflow_sweep<detail::SecondsAlgebra>(job.schedule, job.gate_s, job.rules, ready, net)) return false;
  out.finish_s = std::move(ready);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Event-driven path: the execution core's RankWalk decides when transfers start; a started
// transfer first waits for its route latency, then becomes a flow of the max-min network, which
// re-shares bandwidth once per simulated date among the flows that what changed can affect.
// Net: BundledMaxMinNetwork, or PerFlowMaxMinNetwork (the reference, ReplayOptions::bundle_flows).
template <class Net>
class EventSim {
 public:
  explicit EventSim(const Job& job)
      : job_(job),
        index_(job.schedule),
        walk_(index_, job.arrival_s, job.gate_s, job.rules, job.record_trace),
        network_(make_network(job)) {}

  void run(RunResult& out);
  const ReplaySharingStats& stats() const { return network_.stats(); }

  // The network side of detail::RankWalk.
  void wake_at(double date_s, const detail::Wake& w) { events_.push(Event{date_s, seq_++, w, 0, kNoFlow}); }
  void start_flow(std::uint32_t g, std::uint32_t round, double now_s);

 private:
  static constexpr std::uint64_t kNoFlow = std::numeric_limits<std::uint64_t>::max();

  struct Event {
    double t;
    std::uint64_t seq;   // FIFO among equal times, so runs are deterministic
    detail::Wake wake;   // for the walk, when flow == kNoFlow
    std::uint32_t path;  // else: the transfer's route, worked out when it started (paths_)
    std::uint64_t flow;  // and this transfer's route latency has elapsed (tag(g, round))
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  static std::uint64_t tag(std::uint32_t g, std::uint32_t round) { return (std::uint64_t{round} << 32) | g; }
  static Net make_network(const Job& job) {
    if constexpr (std::is_same_v<Net, detail::BundledMaxMinNetwork>) {
      return Net(job.links, job.prune_links, Net::kScanLinks, job.reshare_interval_s);
    } else {
      return Net(job.links, job.prune_links);
    }
  }
  void data_arrived(std::uint64_t flow, double now) {
    walk_.data_arrived(*this, static_cast<std::uint32_t>(flow), static_cast<std::uint32_t>(flow >> 32), now);
  }
  void activate(std::uint64_t flow, std::uint32_t path, double now);

  // What a flow's start needs of its route, worked out once when the transfer starts (its
  // latency decides when the bytes start to move): computing the route again then was ~3 % of a
  // contended run's instructions.
  struct Path {
    double latency_s = 0;
    double bottleneck_Bps = 0;
    std::array<std::uint32_t, Net::kMaxRoute> binding{};
    std::uint32_t count = 0;
    bool too_long = false;  // more binding links than kMaxRoute (an error if any bytes move)
  };

  const Job& job_;
  detail::RankRounds index_;
  detail::RankWalk<EventSim> walk_;
  Net network_;
  std::vector<std::uint32_t> route_;
  std::vector<Path> paths_;  // by Event::path, while the transfer's latency elapses
  std::vector<std::uint32_t> free_paths_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t seq_ = 0;
};

template <class Net>
void EventSim<Net>::run(RunResult& out) {
  walk_.begin(*this);
  double now = -kInf;
  for (;;) {
    // Shares change only between dates: every event of one date is applied first, then the
    // flows they touched are re-shared once (events at one date are frequent: a round's
    // transfers start together, and flows with equal shares finish together).
    // Flow completions come from the network; at equal dates the other events go first. A flow
    // due within kDateTolerance_s of the current date completes at it: flows that finish
    // together in exact arithmetic then finish together despite rounding, as in SimGrid
    // (surf/precision). It matters: on a congested fabric a flow that ends a rounding error
    // before its peers starts its next round alone, gets more bandwidth and gains twice the lead
    // there; over dozens of rounds a 1e-18 s difference grows into microseconds.
    const double next_event = events_.empty() ? kInf : events_.top().t;
    double next_due = network_.idle() ? kInf : network_.next_due_s();
    if (next_due > now && next_due <= now + kDateTolerance_s) next_due = now;
    const double next = std::min(next_event, next_due);
    if (network_.needs_reshare() && next > now) {
      network_.reshare(now);
      continue;
    }
    // The approximate mode: changes applied without a solve are solved at most its interval
    // later, even when nothing else happens until then.
    const double resolve = network_.resolve_at_s();
    if (resolve <= next && resolve < kInf) {
      now = std::max(now, resolve);
      network_.reshare(now);
      continue;
    }
    if (next == kInf) break;
    now = next;
    if (next_event > next_due) {
      data_arrived(network_.take_due(), now);
      continue;
    }
    const Event ev = events_.top();
    events_.pop();
    if (ev.flow != kNoFlow) {
      activate(ev.flow, ev.path, ev.t);
    } else {
      walk_.wake(*this, ev.wake, ev.t);
    }
  }
  walk_.finish(out);
}

template <class Net>
void EventSim<Net>::start_flow(std::uint32_t g, std::uint32_t round, double now_s) {
  const Transfer& tr = index_.transfer(g, round);
  job_.topo.route_into(tr.src, tr.dst, route_);
  const std::uint32_t id = detail::take_index(paths_, free_paths_);
  Path& p = paths_[id];
  const detail::LinkTable& L = job_.links;
  p.latency_s = 0;
  p.bottleneck_Bps = kInf;
  p.count = 0;
  p.too_long = false;
  for (const std::uint32_t l : route_) {
    p.latency_s += L.latency_s[l];
    p.bottleneck_Bps = std::min(p.bottleneck_Bps, L.bandwidth_Bps[l]);
    if (L.binding[l] == 0) continue;
    if (p.count == p.binding.size()) {
      p.too_long = true;
      continue;
    }
    p.binding[p.count++] = l;
  }
  events_.push(Event{now_s + p.latency_s, seq_++, detail::Wake{}, id, tag(g, round)});
}

// The route latency has elapsed: the bytes start to move.
template <class Net>
void EventSim<Net>::activate(std::uint64_t flow, std::uint32_t path, double now) {
  const Path p = paths_[path];
  free_paths_.push_back(path);
  const auto g = static_cast<std::uint32_t>(flow);
  const auto round = static_cast<std::uint32_t>(flow >> 32);
  const Transfer& tr = index_.transfer(g, round);
  const double bytes = job_.rules.bytes(tr);
  if (bytes <= 0) {
    data_arrived(flow, now);
    return;
  }
  COLLSIM_ASSERT(!p.too_long, "route longer than the network model's kMaxRoute");
  const double penalty = p.latency_s > 0 ? p.latency_s : 1.0;
  network_.add(now, bytes, p.bottleneck_Bps, penalty, std::span<const std::uint32_t>(p.binding.data(), p.count), flow);
}

}  // namespace

RunResult ReplayEngine::run(const Schedule& schedule, const RunConfig& config) {
  const detail::RunPlan plan(schedule, config);
  const Topology& topo = config.topology;
  const LinkTable links(topo);
  Job job{plan.schedule(), topo, links, plan.arrival_s(), plan.gate_s(), {}, config.record_trace};
  job.rules = detail::cost_rules(plan.schedule(), config.size_bytes, topo, config.execution);
  job.prune_links = options_.prune_links;
  job.reshare_interval_s = config.reshare_interval_s;
  if (!(config.reshare_interval_s >= 0) || !std::isfinite(config.reshare_interval_s)) {
    throw ConfigError(fmt::format("RunConfig::reshare_interval_s: expected a finite time >= 0 s, got {}", config.reshare_interval_s));
  }
  if (config.reshare_interval_s > 0 && !options_.bundle_flows) {
    throw ConfigError("RunConfig::reshare_interval_s: the approximate mode needs the bundled solver (the per-flow one is exact only)");
  }

  RunResult result;
  result.engine = "replay";
  result.transfers = schedule.num_transfers();
  last_run_fast_ = false;
  last_stats_ = {};
  if (options_.allow_fast_path) {
    const bool owned = topo.links_owned_by_endpoints();
    if (owned || never_binds(job)) {
      if (config.record_trace) result.trace.reserve(result.transfers);
      last_run_fast_ = run_fast(job, result, owned);
    }
  }
  if (!last_run_fast_) {
    result.trace.clear();
    if (options_.bundle_flows) {
      EventSim<detail::BundledMaxMinNetwork> sim(job);
      sim.run(result);
      last_stats_ = sim.stats();
    } else {
      EventSim<detail::PerFlowMaxMinNetwork> sim(job);
      sim.run(result);
      last_stats_ = sim.stats();
    }
  }
  summarize_run(result, job.arrival_s);
  return result;
}

std::unique_ptr<Engine> make_replay_engine(ReplayOptions options) {
  return std::make_unique<ReplayEngine>(options);
}

}  // namespace collsim
