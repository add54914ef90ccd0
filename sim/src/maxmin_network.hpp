// The replay engine's network model for links that can be shared: flows move bytes at weighted
// max-min fair rates (SimGrid CM02's model without cross-traffic), re-shared once per simulated
// date among the flows that what changed can affect. Private to sim/.
//
// This per-flow solver is the reference: BundledMaxMinNetwork (maxmin_network_bundled.hpp), the
// default, solves the same problem over bundles of interchangeable flows, and tests compare the
// two (ReplayOptions::bundle_flows = false selects this one).
//
// It knows nothing of schedules or ranks: the engine adds a flow when its route latency has
// elapsed and takes it out when it is due. Keeping it apart from the execution rules lets a
// faster solver replace it without touching them.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "collsim/models/topology.hpp"
#include "collsim/sim/replay_engine.hpp"
#include "due_heap.hpp"

namespace collsim::detail {

/// Per-link numbers in flat arrays: the hot loops touch nothing else.
struct LinkTable {
  std::vector<double> bandwidth_Bps;
  std::vector<double> latency_s;
  std::vector<std::uint8_t> binding;  ///< 0 when the topology says the link can never bind

  explicit LinkTable(const Topology& topo);
};

class PerFlowMaxMinNetwork {
 public:
  static constexpr std::size_t kMaxRoute = 8;
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

  /// `prune_links`: re-share only through links whose flows' caps exceed their capacity (the
  /// rates are the same either way; tests switch it off to check that).
  PerFlowMaxMinNetwork(const LinkTable& links, bool prune_links);

  /// A flow of `bytes` > 0 starts moving at `now_s` over `links` (the route's links that can
  /// bind, at most kMaxRoute), capped at `bottleneck_Bps` (the route's narrowest link), with
  /// sharing weight 1 / penalty. `tag` comes back from take_due(). Its rate is set by the next
  /// reshare(), or at once when it crosses no link that can bind.
  void add(double now_s, double bytes, double bottleneck_Bps, double penalty, std::span<const std::uint32_t> links,
           std::uint64_t tag);

  /// True when flows were added or removed since the last reshare().
  bool needs_reshare() const { return !dirty_links_.empty() || !started_.empty(); }
  /// Recomputes the rates the changes since the last call can affect and re-dates those flows.
  void reshare(double now_s);

  bool idle() const { return due_.empty(); }
  /// Always exact: no changes wait for a later solve (see BundledMaxMinNetwork::resolve_at_s).
  double resolve_at_s() const { return std::numeric_limits<double>::infinity(); }
  /// Date of the next flow to finish (the network must not be idle).
  double next_due_s() const { return due_.top_date(); }
  /// Removes the next flow to finish and returns its tag.
  std::uint64_t take_due();

  const ReplaySharingStats& stats() const { return stats_; }

 private:
  struct Flow {
    std::uint64_t tag = 0;
    double remaining = 0;
    double rate = 0;
    double old_rate = 0;         // rate before the reshare in progress
    double last_s = 0;           // when `remaining` was last brought up to date
    double bottleneck_Bps = 0;
    double penalty = 1;          // sharing penalty: the route latency, or 1 when it is 0 (CM02)
    std::uint32_t seen = 0;      // component-search epoch
    std::uint32_t num_links = 0;
    bool fixed = false;
    std::array<std::uint32_t, kMaxRoute> link{};
    std::array<std::uint32_t, kMaxRoute> pos{};  // index of this flow in link_flows_[link[i]]
  };

  void mark_dirty(const std::uint32_t* links, std::uint32_t count);
  bool can_bind(std::uint32_t l) const;

  const LinkTable& L_;
  bool prune_links_;
  std::vector<Flow> slots_;
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
  std::vector<std::uint32_t> started_;  // flows added since the last reshare
  std::vector<std::uint8_t> bound_before_;  // per dirty link: link_binds_ before this reshare
  // Progressive filling's flows by the level at which their cap stops them.
  std::vector<std::pair<double, std::uint32_t>> caps_;
  std::vector<std::uint32_t> comp_links_;
  std::vector<std::uint32_t> comp_flows_;
  std::vector<std::uint32_t> stack_;
  DueHeap due_;  // flows moving bytes, by completion date
  ReplaySharingStats stats_;
};

}  // namespace collsim::detail
