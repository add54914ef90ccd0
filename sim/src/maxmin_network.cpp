#include "maxmin_network.hpp"

#include <algorithm>

#include "collsim/models/error.hpp"
#include "free_list.hpp"

namespace collsim::detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A link binds when its flows' caps exceed its capacity by more than this (relative): rounding
// in a sum of caps must not make an exactly full link look congested.
constexpr double kBindTolerance = 1e-12;

}  // namespace

LinkTable::LinkTable(const Topology& topo) {
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

PerFlowMaxMinNetwork::PerFlowMaxMinNetwork(const LinkTable& links, bool prune_links) : L_(links), prune_links_(prune_links) {
  const std::size_t num_links = L_.bandwidth_Bps.size();
  link_flows_.assign(num_links, {});
  link_seen_.assign(num_links, 0);
  link_binds_.assign(num_links, 0);
  cap_.assign(num_links, 0.0);
  unfixed_.assign(num_links, 0);
  usage_.assign(num_links, 0.0);
  dirty_flag_.assign(num_links, 0);
}

void PerFlowMaxMinNetwork::add(double now_s, double bytes, double bottleneck_Bps, double penalty,
                        std::span<const std::uint32_t> links, std::uint64_t tag) {
  COLLSIM_ASSERT(links.size() <= kMaxRoute, "route longer than kMaxRoute");
  const std::uint32_t slot = take_index(slots_, free_slots_);
  ++stats_.flows;
  Flow& f = slots_[slot];
  f.tag = tag;
  f.remaining = bytes;
  f.rate = 0;
  f.fixed = false;
  f.last_s = now_s;
  f.bottleneck_Bps = bottleneck_Bps;
  f.penalty = penalty;
  f.num_links = static_cast<std::uint32_t>(links.size());
  std::copy(links.begin(), links.end(), f.link.begin());
  if (f.num_links == 0) {
    f.rate = f.bottleneck_Bps;
    due_.set(slot, now_s + bytes / f.rate);
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

std::uint64_t PerFlowMaxMinNetwork::take_due() {
  const std::uint32_t slot = due_.top_id();
  due_.erase(slot);
  Flow& f = slots_[slot];
  for (std::uint32_t i = 0; i < f.num_links; ++i) {
    auto& flows = link_flows_[f.link[i]];
    const std::uint32_t moved = flows.back();
    flows[f.pos[i]] = moved;
    // The flow moved into our place must learn its new position on this link.
    Flow& m = slots_[moved];
    for (std::uint32_t j = 0; j < m.num_links; ++j) {
      if (m.link[j] == f.link[i]) m.pos[j] = f.pos[i];
    }
    flows.pop_back();
  }
  mark_dirty(f.link.data(), f.num_links);
  f.num_links = 0;
  free_slots_.push_back(slot);
  return f.tag;
}

void PerFlowMaxMinNetwork::mark_dirty(const std::uint32_t* links, std::uint32_t count) {
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
bool PerFlowMaxMinNetwork::can_bind(std::uint32_t l) const {
  const auto& flows = link_flows_[l];
  if (!prune_links_) return !flows.empty();
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
void PerFlowMaxMinNetwork::reshare(double now) {
  if (++epoch_ == 0) {
    std::fill(link_seen_.begin(), link_seen_.end(), 0);
    for (auto& f : slots_) f.seen = 0;
    epoch_ = 1;
  }
  comp_links_.clear();
  comp_flows_.clear();
  stack_.clear();
  const auto add_flow = [this](std::uint32_t slot) {
    Flow& f = slots_[slot];
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
  ++stats_.reshares;
  stats_.flows_reshared += comp_flows_.size();
  stats_.links_reshared += comp_links_.size();
  // Flows by the level at which their cap stops them; links by their current share.
  caps_.clear();
  bool sorted = true;
  std::size_t left = 0;
  for (std::uint32_t slot : comp_flows_) {
    Flow& f = slots_[slot];
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
  const auto fix = [this](Flow& f, double rate) {
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
      Flow& f = slots_[caps_[next_cap].second];
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
      Flow& f = slots_[slot];
      if (f.fixed) continue;
      fix(f, std::min(level / f.penalty, f.bottleneck_Bps));
      --left;
    }
    // A link with unfixed flows always fixes one; if not, its counts are wrong and the loop
    // would never end.
    COLLSIM_ASSERT(left < left_before, "progressive filling made no progress");
  }
  for (std::uint32_t slot : comp_flows_) {
    Flow& f = slots_[slot];
    if (due_.contains(slot) && f.rate == f.old_rate) continue;
    f.remaining = std::max(0.0, f.remaining - f.old_rate * (now - f.last_s));
    f.last_s = now;
    ++stats_.redated;
    if (f.rate > 0) {
      due_.set(slot, now + f.remaining / f.rate);
    } else {
      due_.erase(slot);
    }
  }
}

}  // namespace collsim::detail
