// The replay engine: exact dataflow timing of a schedule (schedule.hpp semantics) with
// max-min fair bandwidth sharing, without SimGrid.
//
// Timing model (identical to SimGrid's CM02 model with network/crosstraffic:0 and
// network/TCP-gamma:0, so the two engines agree to rounding):
//  * a transfer of m bytes starts when both endpoints have reached its round (and, in barrier
//    mode, when every participant of its phase has arrived);
//  * it first spends the summed latency of its route, using no bandwidth, then moves m bytes at
//    a max-min fair share of every link on its route, re-shared whenever a flow starts or ends.
//    As in CM02 the shares are weighted by 1 / (route latency) (TCP's RTT unfairness; weight 1
//    for a zero-latency route): on nvswitch, full_mesh and cluster every flow on a link has the
//    same route latency, so this is plain max-min; on dgx1 a forwarded two-hop flow gets half
//    the share of a direct one on a link they share;
//  * the sender is done when the data has arrived; a `reduce` receiver adds m * gamma
//    (topology.link.gamma_s_per_byte) after that;
//  * a flow due within 1e-15 s after the date being processed completes at that date (SimGrid's
//    surf/precision does the same; beyond ~8 s of simulated time 1e-15 s is below a double's
//    resolution and only exact ties merge). On a congested fabric the model amplifies tiny differences: a flow that ends a
//    rounding error before its peers starts its next round alone, gains bandwidth and doubles
//    its lead; over dozens of rounds 1e-18 s grows to microseconds. Merging near-equal dates
//    keeps flows that tie in exact arithmetic tied.
//
// Two execution paths give identical results. When every link that can bind is owned by one
// sender or one receiver (Topology::links_owned_by_endpoints) and no round uses such a link
// twice, no two flows ever share a link and each transfer takes exactly latency + m / (route
// bottleneck): one sweep over the transfers in round order computes every time (tens of
// millions of transfers per second). The same holds on shared links when no link can bind in
// the run: per link, the largest caps that any one round of each rank puts on it, summed over the
// ranks, fit its capacity (Ring on an oversubscribed cluster). Otherwise an event-driven simulation re-shares bandwidth
// once per simulated date, among the flows connected to what changed through links that can
// bind (their flows' caps exceed their capacity). That covers every topology, oversubscribed
// fabrics included: there a few congested leaf uplinks bind at a time, and flows that cross the
// same binding links (with the same cap and penalty) are solved and dated as one bundle, so a
// StragglAR run at n = 1,024 on a 2:1 fabric takes seconds where SimGrid's full re-solve takes
// minutes.
#pragma once

#include <cstdint>
#include <memory>

#include "collsim/sim/engine.hpp"

namespace collsim {

struct ReplayOptions {
  /// Use the one-sweep path when it is exact. Tests switch it off to check the event-driven
  /// path against it.
  bool allow_fast_path = true;
  /// Re-share bandwidth only through links that can bind (their flows' caps exceed their
  /// capacity). Tests switch it off (every link with a flow then counts) to check the pruning
  /// against re-sharing the whole connected group; the rates are the same either way.
  bool prune_links = true;
  /// Solve the sharing over bundles of flows with the same binding links, cap and penalty (one
  /// clock per bundle dates its members). Off: the per-flow solver, kept as the reference that
  /// tests compare with; the times agree to rounding (1e-9 relative is tested).
  bool bundle_flows = true;
};

/// What the event path's bandwidth sharing did in a run (for benchmarks and profiles; all 0
/// after a run on the one-sweep path).
struct ReplaySharingStats {
  std::uint64_t flows = 0;           ///< flows added
  std::uint64_t reshares = 0;        ///< calls to reshare()
  std::uint64_t reshares_skipped = 0;  ///< of which known to change no rate (bundled solver)
  std::uint64_t flows_reshared = 0;  ///< sum over reshares of the flows taken in
  std::uint64_t bundles_reshared = 0;  ///< sum over reshares of the bundles taken in (bundled solver)
  std::uint64_t links_reshared = 0;  ///< sum over reshares of the binding links taken in
  std::uint64_t redated = 0;         ///< completion dates moved
  std::uint64_t reshares_deferred = 0;  ///< of the reshares, applied without a solve (approximate mode)
};

class ReplayEngine final : public Engine {
 public:
  explicit ReplayEngine(ReplayOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "replay"; }
  /// Executes `schedule` on any topology. Throws ConfigError for a config that does not fit the
  /// schedule (see checked_arrivals), ScheduleError for a malformed transfer.
  RunResult run(const Schedule& schedule, const RunConfig& config) override;
  /// The one-sweep path (no index) runs on a fabric whose links are all owned by their
  /// endpoints unless a round uses a link twice, which takes a rank sending or receiving twice;
  /// on other fabrics it may still run (never_binds), but that is known only from the whole run.
  bool builds_event_index(const Topology& topology, bool shares_ports) const override {
    return !options_.allow_fast_path || !topology.links_owned_by_endpoints() || shares_ports;
  }
  bool has_reshare_interval() const override { return true; }
  /// True when the last run() took the one-sweep path (for tests and benchmarks).
  bool last_run_was_fast() const { return last_run_fast_; }
  /// The sharing statistics of the last run().
  const ReplaySharingStats& last_sharing_stats() const { return last_stats_; }

 private:
  ReplayOptions options_;
  bool last_run_fast_ = false;
  ReplaySharingStats last_stats_;
};

std::unique_ptr<Engine> make_replay_engine(ReplayOptions options = {});

}  // namespace collsim
