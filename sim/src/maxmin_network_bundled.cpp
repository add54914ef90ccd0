#include "maxmin_network_bundled.hpp"

#include <algorithm>
#include <bit>
#include <limits>

#include "collsim/models/error.hpp"
#include "free_list.hpp"

namespace collsim::detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The same tolerance as the per-flow solver: a link binds when its flows' caps exceed its
// capacity by more than this (relative).
constexpr double kBindTolerance = 1e-12;

// Heap order of a bundle's members: earliest finish_bytes first, then slot (deterministic ties).
bool later(const auto& a, const auto& b) { return a.finish_bytes > b.finish_bytes || (a.finish_bytes == b.finish_bytes && a.slot > b.slot); }

}  // namespace

std::uint32_t BundledMaxMinNetwork::key_hash(const Key& k) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ k.num_links;
  const auto mix = [&h](std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  };
  for (std::uint32_t i = 0; i < k.num_links; ++i) mix(k.link[i]);
  mix(std::bit_cast<std::uint64_t>(k.bottleneck_Bps));
  mix(std::bit_cast<std::uint64_t>(k.penalty));
  // The table indexes by the low bits: a multiply spreads the high ones down.
  return static_cast<std::uint32_t>((h * 0x9e3779b97f4a7c15ULL) >> 32);
}

BundledMaxMinNetwork::BundledMaxMinNetwork(const LinkTable& links, bool prune_links, std::size_t scan_links,
                                           double reshare_interval_s)
    : L_(links), prune_links_(prune_links), scan_links_(scan_links), interval_s_(reshare_interval_s) {
  COLLSIM_ASSERT(reshare_interval_s >= 0, "negative reshare interval");
  const std::size_t num_links = L_.bandwidth_Bps.size();
  link_flows_.assign(num_links, {});
  link_bundles_.assign(num_links, {});
  link_caps_Bps_.assign(num_links, 0.0);
  link_seen_.assign(num_links, 0);
  link_binds_.assign(num_links, 0);
  link_saturated_.assign(num_links, 0);
  cap_.assign(num_links, 0.0);
  unfixed_.assign(num_links, 0);
  usage_.assign(num_links, 0.0);
  dirty_flag_.assign(num_links, 0);
}

void BundledMaxMinNetwork::add(double now_s, double bytes, double bottleneck_Bps, double penalty,
                               std::span<const std::uint32_t> links, std::uint64_t tag) {
  COLLSIM_ASSERT(links.size() <= kMaxRoute, "route longer than kMaxRoute");
  const std::uint32_t slot = take_index(slots_, free_slots_);
  if (owner_.size() < slots_.size()) owner_.emplace_back();
  ++stats_.flows;
  Flow& f = slots_[slot];
  f.tag = tag;
  f.left_bytes = bytes;
  f.bottleneck_Bps = bottleneck_Bps;
  f.penalty = penalty;
  owner_[slot].bundle = kNone;
  f.num_links = static_cast<std::uint32_t>(links.size());
  std::copy(links.begin(), links.end(), f.link.begin());
  if (f.num_links == 0) {
    // Nothing can ever share with it: its own bundle, at its cap from now on.
    join(slot, bytes, now_s);
    const std::uint32_t id = owner_[slot].bundle;
    Bundle& b = bundles_[id];
    b.rate = bottleneck_Bps;
    b.rate_count = 1;
    b.fresh = false;
    b.touched = false;
    touched_.pop_back();
    redate(id);
    return;
  }
  for (std::uint32_t i = 0; i < f.num_links; ++i) {
    auto& flows = link_flows_[f.link[i]];
    f.pos[i] = static_cast<std::uint32_t>(flows.size());
    flows.push_back(slot);
    link_caps_Bps_[f.link[i]] += bottleneck_Bps;
  }
  mark_dirty(f.link.data(), f.num_links);
  started_.push_back(slot);
  changed_ = true;
}

std::uint64_t BundledMaxMinNetwork::take_due() {
  const DueHeap& due = first_due();
  const std::uint32_t id = due.top_id();
  // In the approximate mode's interval the bundle keeps its aggregate rate until the next solve.
  const bool deferred = interval_s_ > 0 && due.top_date() < next_solve_s_;
  Bundle& b = bundles_[id];
  const Entry* first = top(id);
  COLLSIM_ASSERT(first != nullptr, "a dated bundle has no member");
  const std::uint32_t slot = first->slot;
  std::pop_heap(b.heap.begin(), b.heap.end(), [](const Entry& x, const Entry& y) { return later(x, y); });
  b.heap.pop_back();
  b.first_known = false;
  Flow& f = slots_[slot];
  for (std::uint32_t i = 0; i < f.num_links; ++i) {
    const std::uint32_t l = f.link[i];
    auto& flows = link_flows_[l];
    const std::uint32_t moved = flows.back();
    flows[f.pos[i]] = moved;
    Flow& m = slots_[moved];
    for (std::uint32_t j = 0; j < m.num_links; ++j) {
      if (m.link[j] == l) m.pos[j] = f.pos[i];
    }
    flows.pop_back();
    // Exactly 0 when empty, so rounding in the running sum cannot outlive the link's flows.
    link_caps_Bps_[l] = flows.empty() ? 0.0 : link_caps_Bps_[l] - f.bottleneck_Bps;
  }
  mark_dirty(f.link.data(), f.num_links);
  changed_ = changed_ || f.num_links > 0;
  f.num_links = 0;
  owner_[slot].bundle = kNone;
  free_slots_.push_back(slot);
  // The others keep their rate until the next reshare: date the next member now, since more
  // completions at this date may be taken before that reshare.
  if (--b.count == 0) {
    drop_if_empty(id);
  } else {
    if (!deferred) {
      b.rate_count = b.count;  // exact: the others keep their rate
    } else if (!b.touched) {
      b.touched = true;  // apply_without_solve gives the others its share
      touched_.push_back(id);
    }
    redate(id);
  }
  return f.tag;
}

void BundledMaxMinNetwork::mark_dirty(const std::uint32_t* links, std::uint32_t count) {
  for (std::uint32_t i = 0; i < count; ++i) {
    if (dirty_flag_[links[i]] == 0) {
      dirty_flag_[links[i]] = 1;
      dirty_links_.push_back(links[i]);
    }
  }
}

// As PerFlowMaxMinNetwork::can_bind, from a running sum of the caps instead of a fresh one.
bool BundledMaxMinNetwork::can_bind(std::uint32_t l) const {
  const std::size_t count = link_flows_[l].size();
  if (!prune_links_) return count > 0;
  if (count < 2) return false;
  return link_caps_Bps_[l] > L_.bandwidth_Bps[l] * (1 + kBindTolerance);
}

void BundledMaxMinNetwork::advance(Bundle& b, double now) const {
  if (now == b.last_s) return;
  b.moved_bytes += b.rate * (now - b.last_s);
  b.last_s = now;
}

// The bundle of the flow's links that bind now (made if missing).
std::uint32_t BundledMaxMinNetwork::bundle_for(const Flow& f) {
  Key key;
  key.bottleneck_Bps = f.bottleneck_Bps;
  key.penalty = f.penalty;
  for (std::uint32_t i = 0; i < f.num_links; ++i) {
    if (link_binds_[f.link[i]] != 0) key.link[key.num_links++] = f.link[i];
  }
  // Insertion sort: a route has a few links (std::sort was a call and a loop setup each time).
  for (std::uint32_t i = 1; i < key.num_links; ++i) {
    const std::uint32_t l = key.link[i];
    std::uint32_t j = i;
    for (; j > 0 && key.link[j - 1] > l; --j) key.link[j] = key.link[j - 1];
    key.link[j] = l;
  }
  const bool shared = key.num_links > 0;
  std::uint32_t hash = 0;
  if (shared) {
    hash = key_hash(key);
    const std::uint32_t found = shared_by_key_.find(hash, [&](std::uint32_t id) { return bundles_[id].key == key; });
    if (found != HashedIdTable::kAbsent) return found;
  }
  const std::uint32_t id = take_index(bundles_, free_bundles_);
  Bundle& b = bundles_[id];
  b.key = key;
  b.shared = shared;
  b.count = 0;
  b.moved_bytes = 0;
  b.last_s = 0;
  b.rate = 0;
  b.old_rate = 0;
  b.touched = false;
  b.fresh = true;
  b.pending = false;
  b.fixed = false;
  b.seen = 0;
  b.heap.clear();
  b.first_known = false;
  if (shared) {
    b.hash = hash;
    shared_by_key_.insert(id, hash);
    for (std::uint32_t i = 0; i < key.num_links; ++i) {
      auto& list = link_bundles_[key.link[i]];
      b.pos[i] = static_cast<std::uint32_t>(list.size());
      list.push_back(id);
    }
  }
  return id;
}

void BundledMaxMinNetwork::join(std::uint32_t slot, double left_bytes, double now) {
  const std::uint32_t id = bundle_for(slots_[slot]);
  Bundle& b = bundles_[id];
  if (b.count == 0) {
    b.moved_bytes = 0;  // a fresh clock keeps finish_bytes small, so their rounding stays small
    b.last_s = now;
  } else {
    advance(b, now);
  }
  Flow& f = slots_[slot];
  Owner& o = owner_[slot];
  o.bundle = id;
  ++o.generation;
  f.finish_bytes = b.moved_bytes + left_bytes;
  b.heap.push_back(Entry{f.finish_bytes, slot, o.generation});
  b.first_known = false;
  std::push_heap(b.heap.begin(), b.heap.end(), [](const Entry& x, const Entry& y) { return later(x, y); });
  ++b.count;
  if (!b.touched) {
    b.touched = true;
    touched_.push_back(id);
  }
}

// Takes a flow out of its bundle; its heap entry goes stale (skipped by top()).
void BundledMaxMinNetwork::leave(std::uint32_t slot) {
  const std::uint32_t id = owner_[slot].bundle;
  owner_[slot].bundle = kNone;
  Bundle& b = bundles_[id];
  b.first_known = false;
  if (!b.touched) {
    b.touched = true;
    touched_.push_back(id);
  }
  if (--b.count == 0) drop_if_empty(id);
}

void BundledMaxMinNetwork::drop_if_empty(std::uint32_t id) {
  Bundle& b = bundles_[id];
  if (b.count != 0) return;
  // A bundle is queued in the due heap of its kind only (shared does not change in its life).
  due_of(b).erase(id);
  if (b.shared) {
    shared_by_key_.erase(id, b.hash);
    for (std::uint32_t i = 0; i < b.key.num_links; ++i) {
      const std::uint32_t l = b.key.link[i];
      auto& list = link_bundles_[l];
      const std::uint32_t moved = list.back();
      list[b.pos[i]] = moved;
      Bundle& m = bundles_[moved];
      for (std::uint32_t j = 0; j < m.key.num_links; ++j) {
        if (m.key.link[j] == l) m.pos[j] = b.pos[i];
      }
      list.pop_back();
    }
  }
  b.shared = false;
  b.key = Key{};
  b.heap.clear();
  free_bundles_.push_back(id);
}

// The member that finishes first, after dropping stale entries; nullptr when there is none.
const BundledMaxMinNetwork::Entry* BundledMaxMinNetwork::top(std::uint32_t id) {
  Bundle& b = bundles_[id];
  while (!b.heap.empty()) {
    const Entry& e = b.heap.front();
    const Owner& o = owner_[e.slot];
    if (o.bundle == id && o.generation == e.generation) return &e;
    std::pop_heap(b.heap.begin(), b.heap.end(), [](const Entry& x, const Entry& y) { return later(x, y); });
    b.heap.pop_back();
  }
  return nullptr;
}

// Queues the bundle at its first member's completion at the current rate.
void BundledMaxMinNetwork::redate(std::uint32_t id) {
  Bundle& b = bundles_[id];
  if (!b.first_known) {
    const Entry* first = top(id);
    if (first == nullptr) {
      due_of(b).erase(id);
      return;
    }
    b.first_finish_bytes = first->finish_bytes;
    b.first_known = true;
  }
  if (!(b.rate > 0)) {
    due_of(b).erase(id);
    return;
  }
  due_of(b).set(id, b.last_s + std::max(0.0, b.first_finish_bytes - b.moved_bytes) / b.rate);
}

// The started flows' bundles (touched_) at their caps, without a filling, when every link they
// cross that binds fits all its flows then (the caller checked that no changed link limited
// anyone). Why that is the max-min solution: the other bundles keep their rates and reasons,
// the started ones are at their caps, and no link is over capacity. Returns false, changing
// nothing, when a link would not fit; the margin keeps the answer the filling's despite rounding
// (a link with room left never sets a level).
bool BundledMaxMinNetwork::settle_at_caps(double now) {
  constexpr double kRoomMargin = 1e-9;  // relative to the link's capacity
  checked_links_.clear();
  for (std::uint32_t id : touched_) {
    const Bundle& b = bundles_[id];
    for (std::uint32_t i = 0; i < b.key.num_links; ++i) {
      const std::uint32_t l = b.key.link[i];
      if (std::find(checked_links_.begin(), checked_links_.end(), l) != checked_links_.end()) continue;
      checked_links_.push_back(l);
      double used_Bps = 0;
      for (std::uint32_t other : link_bundles_[l]) {
        const Bundle& o = bundles_[other];
        used_Bps += o.count * (o.touched ? o.key.bottleneck_Bps : o.rate);
      }
      if (used_Bps > L_.bandwidth_Bps[l] * (1 - kRoomMargin)) return false;
    }
  }
  ++stats_.reshares;
  ++stats_.reshares_skipped;
  stats_.bundles_reshared += touched_.size();
  for (std::uint32_t id : touched_) {
    Bundle& b = bundles_[id];
    b.touched = false;
    if (b.count == 0) continue;
    stats_.flows_reshared += b.count;
    b.old_rate = b.rate;
    b.rate = b.key.bottleneck_Bps;
    b.rate_count = b.count;
    b.fresh = false;
    if (now != b.last_s) {
      b.moved_bytes += b.old_rate * (now - b.last_s);
      b.last_s = now;
    }
    stats_.redated += b.count;
    redate(id);
  }
  touched_.clear();
  dirty_links_.clear();
  return true;
}

// The approximate mode between solves: started flows join their bundles (keyed by the binding
// links of the last solve), and a bundle whose members changed keeps its aggregate rate (rate x
// members, at most its flows' cap), so no link carries more than at the last solve. What that
// rule cannot place is solved at once (returns false, the joins made): a new bundle on binding
// links (its share would come from other bundles), and flows joining a bundle at its cap (their
// links may have room for all of them at the cap, which settle_at_caps would give). The next
// solve, at most the interval later, takes every change in.
bool BundledMaxMinNetwork::apply_without_solve(double now) {
  for (std::uint32_t slot : started_) join(slot, slots_[slot].left_bytes, now);
  started_.clear();
  for (std::uint32_t id : touched_) {
    const Bundle& b = bundles_[id];
    if (b.count == 0 || !b.shared) continue;
    if (b.fresh || (b.count > b.rate_count && b.rate >= b.key.bottleneck_Bps)) return false;
  }
  ++stats_.reshares;
  ++stats_.reshares_deferred;
  for (std::uint32_t id : touched_) {
    Bundle& b = bundles_[id];
    b.touched = false;
    if (b.count == 0) continue;
    if (!b.pending) {
      b.pending = true;
      pending_touched_.push_back(id);
    }
    if (b.fresh) {  // private: no link it crosses binds, so its cap is its max-min rate
      b.fresh = false;
      b.rate = b.key.bottleneck_Bps;
    } else if (b.rate_count != b.count) {
      // The bundle keeps what it had in all: no link carries more than at the last solve.
      advance(b, now);
      b.rate = std::min(b.rate * (static_cast<double>(b.rate_count) / b.count), b.key.bottleneck_Bps);
    }
    b.rate_count = b.count;
    stats_.bundles_reshared += 1;
    redate(id);
  }
  touched_.clear();
  resolve_at_s_ = next_solve_s_;
  return true;
}

// The per-flow solver's progressive filling (see maxmin_network.cpp), one bundle at a time:
// a bundle of k flows weighs k / penalty on each of its links and takes k times its rate from
// them. Which bundles are re-shared follows the same rule: those on a dirty link that binds,
// those whose members changed, and everything connected to them through binding links.
void BundledMaxMinNetwork::reshare(double now) {
  // The approximate mode: changes within the interval after a solve wait for the next one.
  bool solve_all = false;
  if (interval_s_ > 0) {
    changed_ = false;
    // A link that starts binding is solved at once: until then its flows would not share it.
    bool starts_binding = false;
    for (std::uint32_t l : dirty_links_) starts_binding = starts_binding || (link_binds_[l] == 0 && can_bind(l));
    if (now < next_solve_s_ && !starts_binding && apply_without_solve(now)) return;
    // The shortcuts below assume every rate outside the changes is max-min fair, which is not so
    // after a pass without a solve (its timer is still set), after completions in the interval
    // (take_due touched their bundles) or when the pass above gave up after its joins: then
    // fill whatever the changes reach.
    solve_all = resolve_at_s_ < kInf || !touched_.empty();
    next_solve_s_ = now + interval_s_;
    resolve_at_s_ = kInf;
    for (std::uint32_t id : pending_touched_) {
      Bundle& b = bundles_[id];
      b.pending = false;
      if (b.count > 0 && !b.touched) {
        b.touched = true;
        touched_.push_back(id);
      }
    }
    pending_touched_.clear();
  }
  if (++epoch_ == 0) {
    std::fill(link_seen_.begin(), link_seen_.end(), 0);
    for (auto& b : bundles_) b.seen = 0;
    for (auto& f : slots_) f.rekeyed = 0;
    epoch_ = 1;
  }
  comp_links_.clear();
  comp_bundles_.clear();
  stack_.clear();
  flipped_.clear();
  for (std::uint32_t l : dirty_links_) {
    dirty_flag_[l] = 0;
    link_seen_[l] = epoch_;
    const std::uint8_t binds = can_bind(l) ? 1 : 0;
    if (binds != link_binds_[l]) flipped_.push_back(l);
    link_binds_[l] = binds;
  }
  // When no changed link limits anyone (every dirty link that binds had capacity left in the
  // last filling of its component, and none started or stopped binding), each other bundle keeps
  // what made its rate max-min fair: a saturated link on which it is the largest, or its cap.
  // Flows that only finished then change no rate (the max-min solution is unique; their bundles
  // were re-dated by take_due). Flows that started change none either if the links they cross
  // still fit every flow at its cap (settle_at_caps): then they move at their caps.
  bool limits = solve_all || !flipped_.empty();
  for (std::uint32_t l : dirty_links_) limits = limits || (link_binds_[l] != 0 && link_saturated_[l] != 0);
  if (!limits && started_.empty()) {
    dirty_links_.clear();
    ++stats_.reshares;
    ++stats_.reshares_skipped;
    return;
  }
  // A link that starts or stops binding changes the link set of every flow on it: they move to
  // the bundle of their new set with the bytes they have left.
  for (std::uint32_t l : flipped_) {
    for (std::uint32_t slot : link_flows_[l]) {
      Flow& f = slots_[slot];
      if (owner_[slot].bundle == kNone || f.rekeyed == epoch_) continue;  // just started, or moved already
      f.rekeyed = epoch_;
      Bundle& b = bundles_[owner_[slot].bundle];
      advance(b, now);
      const double left = std::max(0.0, f.finish_bytes - b.moved_bytes);
      leave(slot);
      join(slot, left, now);
    }
  }
  for (std::uint32_t slot : started_) join(slot, slots_[slot].left_bytes, now);
  started_.clear();
  if (!limits && settle_at_caps(now)) return;

  const auto add_bundle = [this](std::uint32_t id) {
    Bundle& b = bundles_[id];
    if (b.seen == epoch_) return;
    b.seen = epoch_;
    b.weight = b.count * (1.0 / b.key.penalty);  // once per reshare: the filling reads it per link
    comp_bundles_.push_back(id);
    for (std::uint32_t i = 0; i < b.key.num_links; ++i) {
      const std::uint32_t l = b.key.link[i];
      if (link_seen_[l] == epoch_) continue;
      link_seen_[l] = epoch_;
      stack_.push_back(l);  // every link of a key binds
    }
  };
  for (std::uint32_t l : dirty_links_) {
    if (link_binds_[l] != 0) stack_.push_back(l);
  }
  dirty_links_.clear();
  for (std::uint32_t id : touched_) {
    if (bundles_[id].count > 0) add_bundle(id);
  }
  // Every bundle on a link of the component is in the component: the link's weight and count
  // are summed in the same pass.
  while (!stack_.empty()) {
    const std::uint32_t l = stack_.back();
    stack_.pop_back();
    comp_links_.push_back(l);
    std::uint32_t unfixed = 0;
    double usage = 0;
    for (std::uint32_t id : link_bundles_[l]) {
      add_bundle(id);
      const Bundle& b = bundles_[id];
      unfixed += b.count;
      usage += b.weight;
    }
    cap_[l] = L_.bandwidth_Bps[l];
    unfixed_[l] = unfixed;
    usage_[l] = usage;
  }
  ++stats_.reshares;
  stats_.links_reshared += comp_links_.size();
  stats_.bundles_reshared += comp_bundles_.size();

  caps_.clear();
  bool sorted = true;
  std::size_t left = 0;
  for (std::uint32_t id : comp_bundles_) {
    Bundle& b = bundles_[id];
    stats_.flows_reshared += b.count;
    b.old_rate = b.rate;
    b.fixed = false;
    if (b.key.num_links == 0) {  // nothing but its cap limits it
      b.fixed = true;
      b.rate = b.key.bottleneck_Bps;
      continue;
    }
    ++left;
    caps_.emplace_back(b.key.bottleneck_Bps * b.key.penalty, id);
    sorted = sorted && (caps_.size() < 2 || caps_[caps_.size() - 2].first <= caps_.back().first);
  }
  if (!sorted) std::sort(caps_.begin(), caps_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const auto fix = [this](Bundle& b, double rate) {
    b.fixed = true;
    b.rate = rate;
    for (std::uint32_t i = 0; i < b.key.num_links; ++i) {
      const std::uint32_t l = b.key.link[i];
      cap_[l] -= rate * b.count;
      usage_[l] -= b.weight;
      unfixed_[l] -= b.count;
    }
  };
  // Links by share in a lazy min-heap: fixing bundles at the lowest level only raises the
  // other links' shares (they give up less than their share per unit of weight), so an entry
  // whose share went stale is re-queued at its new share when it reaches the top: O(log links)
  // per level instead of a scan of every link of the component.
  // A small component (nearly all of them on a leaf/spine fabric: a few congested leaves) keeps
  // the same queue as a plain list: at every level the heap re-queued each link whose share
  // moved (two sifts each), 40 % of a reshare at n = 2,048 (perf), where one pass over a few
  // links does. The pass takes exactly the link the heap would, so the rates stay the same to the
  // last bit (a choice from fresh shares alone differs where rounding lowered a share a little,
  // and which links tie then changes; at n = 2,048 finish times moved by 1e-7). The heap
  // re-queues entries, smallest (queued share, link) first, until the smallest is fresh. A
  // share that rose is met at its new value; one that rounding lowered is met at its old value,
  // then re-queued lower and taken at once. So the link taken is the smallest by
  // (max(queued, share), link), and what the heap re-queued on the way is every entry smaller
  // than that one.
  const bool scan = comp_links_.size() <= scan_links_;
  const auto by_share = [](const std::pair<double, std::uint32_t>& a, const std::pair<double, std::uint32_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second > b.second);
  };
  for (std::uint32_t l : comp_links_) link_saturated_[l] = 0;
  link_heap_.clear();
  scan_link_.clear();
  scan_queued_.clear();
  for (std::uint32_t l : comp_links_) {
    if (unfixed_[l] == 0) continue;
    if (scan) {
      scan_link_.push_back(l);
      scan_queued_.push_back(cap_[l] / usage_[l]);
    } else {
      link_heap_.emplace_back(cap_[l] / usage_[l], l);
    }
  }
  if (!scan) std::make_heap(link_heap_.begin(), link_heap_.end(), by_share);
  scan_share_.resize(scan_link_.size());
  std::size_t scan_count = scan_link_.size();
  // The last scan's smallest (key, link): the entries the heap re-queued on the way there are
  // brought to the share that scan saw at the start of the next one (one pass, not two).
  double last_key = -kInf;
  std::uint32_t last_best = kNone;
  const auto lowest_share = [&](std::uint32_t& best, double& best_share) {
    best = kNone;
    best_share = kInf;
    if (scan) {
      double key = kInf;
      for (std::size_t i = 0; i < scan_count;) {
        const std::uint32_t l = scan_link_[i];
        const double queued = scan_queued_[i];
        if (queued < last_key || (queued == last_key && l <= last_best)) scan_queued_[i] = scan_share_[i];
        if (unfixed_[l] == 0) {
          --scan_count;
          scan_link_[i] = scan_link_[scan_count];
          scan_queued_[i] = scan_queued_[scan_count];
          scan_share_[i] = scan_share_[scan_count];
          continue;
        }
        const double share = cap_[l] / usage_[l];
        scan_share_[i] = share;
        const double mine = std::max(scan_queued_[i], share);
        if (mine < key || (mine == key && l < best)) {
          key = mine;
          best = l;
          best_share = share;
        }
        ++i;
      }
      last_key = key;
      last_best = best;
      return;
    }
    while (!link_heap_.empty()) {
      const auto [queued, l] = link_heap_.front();
      std::pop_heap(link_heap_.begin(), link_heap_.end(), by_share);
      if (unfixed_[l] == 0) {
        link_heap_.pop_back();
        continue;
      }
      const double share = cap_[l] / usage_[l];
      if (share != queued) {
        link_heap_.back() = {share, l};
        std::push_heap(link_heap_.begin(), link_heap_.end(), by_share);
        continue;
      }
      // Stays queued: its bundles may all be fixed by caps first, or it is the level now.
      std::push_heap(link_heap_.begin(), link_heap_.end(), by_share);
      best = l;
      best_share = share;
      return;
    }
  };
  std::size_t next_cap = 0;
  while (left > 0) {
    std::uint32_t best = kNone;
    double best_share = kInf;
    lowest_share(best, best_share);
    bool capped = false;
    for (; next_cap < caps_.size() && caps_[next_cap].first <= best_share; ++next_cap) {
      Bundle& b = bundles_[caps_[next_cap].second];
      if (b.fixed) continue;
      fix(b, b.key.bottleneck_Bps);
      --left;
      capped = true;
    }
    if (capped || left == 0) continue;
    COLLSIM_ASSERT(best != kNone, "progressive filling found no limit for an unfixed bundle");
    const double level = std::max(best_share, 0.0);
    const std::size_t left_before = left;
    link_saturated_[best] = 1;
    for (std::uint32_t id : link_bundles_[best]) {
      Bundle& b = bundles_[id];
      if (b.fixed) continue;
      fix(b, std::min(level / b.key.penalty, b.key.bottleneck_Bps));
      --left;
    }
    COLLSIM_ASSERT(left < left_before, "progressive filling made no progress");
  }
  // Bring each clock to now at the rate it had, then date the first member at the new rate. A
  // bundle whose rate and members did not change keeps its queued date.
  for (std::uint32_t id : comp_bundles_) {
    Bundle& b = bundles_[id];
    b.fresh = false;
    b.rate_count = b.count;
    if (!b.touched && b.rate == b.old_rate && due_of(b).contains(id)) continue;
    if (now != b.last_s) {
      b.moved_bytes += b.old_rate * (now - b.last_s);
      b.last_s = now;
    }
    stats_.redated += b.count;
    redate(id);
  }
  for (std::uint32_t id : touched_) bundles_[id].touched = false;
  touched_.clear();
}

}  // namespace collsim::detail
