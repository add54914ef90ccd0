// The replay engine's default network model: the same weighted max-min sharing as
// PerFlowMaxMinNetwork (maxmin_network.hpp), computed over bundles of interchangeable flows.
//
// Why: on an oversubscribed cluster a reshare takes in every flow crossing the congested leaf
// links (hundreds at n = 1,024) and almost all of them change rate, so a per-flow solver pays
// for every flow at every completion: about n^3 work per run. But flows that cross the same
// links that can bind, with the same cap and the same sharing penalty, get the same rate in
// every max-min solution, at every date. A bundle holds them all: the solver sees one weighted
// variable per bundle, and the bundle's members are dated by one clock, moved_bytes (the bytes each
// member has moved since the bundle was made), so a rate change costs one heap update per bundle,
// not one per flow. A flow's bytes left are its finish_bytes - the bundle's moved_bytes.
//
// A flow's bundle follows the links of its route that bind now (PerFlowMaxMinNetwork::can_bind):
// when a link starts or stops binding, its flows move to the bundle of their new link set. A
// flow that crosses no binding link has a bundle of its own (nothing but its cap limits it).
//
// Most reshares need no filling at all: when no changed link was saturated, flows that finished
// change no rate, and flows that started move at their caps if their links fit them (reshare()
// says why that is exact). The filling itself finds each level by a scan on the small components
// of leaf/spine fabrics, a heap on large ones; both take the same links in the same order.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "hashed_id_table.hpp"
#include "maxmin_network.hpp"

namespace collsim::detail {

class BundledMaxMinNetwork {
 public:
  static constexpr std::size_t kMaxRoute = PerFlowMaxMinNetwork::kMaxRoute;
  static constexpr std::uint32_t kNone = PerFlowMaxMinNetwork::kNone;
  static constexpr std::size_t kScanLinks = 64;

  /// The same contract as PerFlowMaxMinNetwork (add, reshare, take_due); the rates are the same
  /// up to rounding (the per-flow solver sums one flow at a time, this one a bundle at a time).
  /// `scan_links`: components with at most this many links are filled by a scan, larger ones
  /// with a heap (the rates are the same to the bit; tests set it to compare the two).
  /// `reshare_interval_s` > 0: the approximate mode (RunConfig::reshare_interval_s). After a
  /// solve, changes within the interval are applied without one where a bundle can absorb them
  /// (it keeps its aggregate rate: see apply_without_solve); the next solve, at most the
  /// interval later, takes them all in.
  BundledMaxMinNetwork(const LinkTable& links, bool prune_links, std::size_t scan_links = kScanLinks,
                       double reshare_interval_s = 0);

  void add(double now_s, double bytes, double bottleneck_Bps, double penalty, std::span<const std::uint32_t> links,
           std::uint64_t tag);
  bool needs_reshare() const { return interval_s_ > 0 ? changed_ : !dirty_links_.empty() || !started_.empty(); }
  void reshare(double now_s);
  /// When the changes applied without a solve must be solved (infinity when there are none):
  /// the engine calls reshare() then even if nothing else happens.
  double resolve_at_s() const { return resolve_at_s_; }
  bool idle() const { return due_shared_.empty() && due_private_.empty(); }
  double next_due_s() const { return first_due().top_date(); }
  std::uint64_t take_due();
  const ReplaySharingStats& stats() const { return stats_; }

 private:
  struct Flow {
    std::uint64_t tag = 0;
    double left_bytes = 0;  // until the flow joins a bundle (at the next reshare)
    double finish_bytes = 0;  // done when its bundle's moved_bytes reaches this
    double bottleneck_Bps = 0;
    double penalty = 1;
    std::uint32_t rekeyed = 0;     // reshare epoch in which the flow last changed bundle
    std::uint32_t num_links = 0;
    std::array<std::uint32_t, kMaxRoute> link{};
    std::array<std::uint32_t, kMaxRoute> pos{};  // index of this flow in link_flows_[link[i]]
  };

  // What makes flows interchangeable: the binding links (sorted), the cap and the penalty.
  struct Key {
    std::array<std::uint32_t, kMaxRoute> link{};
    std::uint32_t num_links = 0;
    double bottleneck_Bps = 0;
    double penalty = 0;
    // Only the first num_links links (the rest are 0): a loop over a few, not a memcmp call.
    bool operator==(const Key& o) const {
      if (num_links != o.num_links || bottleneck_Bps != o.bottleneck_Bps || penalty != o.penalty) return false;
      for (std::uint32_t i = 0; i < num_links; ++i) {
        if (link[i] != o.link[i]) return false;
      }
      return true;
    }
  };
  static std::uint32_t key_hash(const Key& k);

  // Which bundle a flow is in, apart from Flow: top() checks it for every heap entry it meets,
  // and a small dense array stays in cache where the flows do not.
  struct Owner {
    std::uint32_t bundle = kNone;
    std::uint32_t generation = 0;  // bumped at every join: older heap entries are stale
  };

  struct Entry {
    double finish_bytes;
    std::uint32_t slot;
    std::uint32_t generation;
  };

  // What the solve reads (key, seen, count, then the rates) comes first: two cache lines.
  struct alignas(64) Bundle {
    Key key;
    std::uint32_t seen = 0;
    std::uint32_t count = 0;
    double rate = 0;
    double old_rate = 0;
    double weight = 0;  // count / penalty, as of the reshare in progress
    bool fixed = false;
    bool touched = false;  // members joined or left since the last reshare
    bool shared = false;   // in shared_by_key_ (a bundle without binding links is private to its flow)
    bool fresh = false;    // made since the last solve: no rate yet
    bool pending = false;  // in pending_touched_ (approximate mode)
    std::uint32_t rate_count = 0;  // members when the rate was set (approximate mode: rate x this is kept)
    double moved_bytes = 0;  // bytes each member moved since the bundle was made, as of last_s
    double last_s = 0;
    // finish_bytes of the first member while first_known: a reshare that only changes the rate
    // re-dates the bundle without reading its heap (top() misses the cache on flows' owners).
    // Any change of members forgets it.
    double first_finish_bytes = 0;
    bool first_known = false;
    std::array<std::uint32_t, kMaxRoute> pos{};  // index in link_bundles_[key.link[i]]
    std::uint32_t hash = 0;  // key_hash(key), while shared
    std::vector<Entry> heap;  // members by finish_bytes (min-heap, stale entries skipped)
  };

  void mark_dirty(const std::uint32_t* links, std::uint32_t count);
  bool can_bind(std::uint32_t l) const;
  void advance(Bundle& b, double now) const;
  std::uint32_t bundle_for(const Flow& f);
  void join(std::uint32_t slot, double left_bytes, double now);
  void leave(std::uint32_t slot);
  void drop_if_empty(std::uint32_t id);
  const Entry* top(std::uint32_t id);
  void redate(std::uint32_t id);
  bool settle_at_caps(double now);
  bool apply_without_solve(double now);

  const LinkTable& L_;
  bool prune_links_;
  std::size_t scan_links_;
  std::vector<Flow> slots_;
  std::vector<Owner> owner_;  // per slot
  std::vector<std::uint32_t> free_slots_;
  std::vector<Bundle> bundles_;
  std::vector<std::uint32_t> free_bundles_;
  HashedIdTable shared_by_key_;  // the shared bundles, by key_hash(key)
  std::vector<std::vector<std::uint32_t>> link_flows_;
  std::vector<std::vector<std::uint32_t>> link_bundles_;  // bundles whose key holds the link
  std::vector<double> link_caps_Bps_;  // per link: sum of its flows' caps (for can_bind)
  std::vector<std::uint32_t> link_seen_;
  std::vector<std::uint8_t> link_binds_;
  std::vector<std::uint8_t> link_saturated_;  // the last filling of its component fixed bundles at it
  std::vector<double> cap_;
  std::vector<std::uint32_t> unfixed_;
  std::vector<double> usage_;
  std::uint32_t epoch_ = 0;
  std::vector<std::uint32_t> dirty_links_;
  std::vector<std::uint8_t> dirty_flag_;
  std::vector<std::uint32_t> started_;
  std::vector<std::uint32_t> touched_;  // bundles that members joined or left
  std::vector<std::uint32_t> flipped_;  // dirty links whose binding status changed
  std::vector<std::pair<double, std::uint32_t>> caps_;
  std::vector<std::uint32_t> comp_links_;
  std::vector<std::uint32_t> checked_links_;  // settle_at_caps
  // (queued share, link): a heap on a large component, a list scanned for its minimum on a small one.
  std::vector<std::pair<double, std::uint32_t>> link_heap_;
  // The same queue as three columns on a small component (scanned, not a heap): link, queued
  // share, and its share now (filled by the scan).
  std::vector<std::uint32_t> scan_link_;
  std::vector<double> scan_queued_;
  std::vector<double> scan_share_;
  std::vector<std::uint32_t> comp_bundles_;
  std::vector<std::uint32_t> stack_;
  // Bundles with members, by their first member's completion date, in two heaps: the shared
  // bundles, which reshares re-date all the time, and the private ones (flows that cross no
  // binding link, dated once), most of the bundles at any time. The re-dated ones then sift
  // through a small heap that stays in cache. Together they order bundles as one heap would.
  DueHeap due_shared_;
  DueHeap due_private_;
  DueHeap& due_of(const Bundle& b) { return b.shared ? due_shared_ : due_private_; }
  const DueHeap& first_due() const {
    if (due_private_.empty()) return due_shared_;
    if (due_shared_.empty()) return due_private_;
    const double a = due_shared_.top_date();
    const double b = due_private_.top_date();
    return a < b || (a == b && due_shared_.top_id() < due_private_.top_id()) ? due_shared_ : due_private_;
  }
  DueHeap& first_due() { return &std::as_const(*this).first_due() == &due_shared_ ? due_shared_ : due_private_; }
  // The approximate mode: no solve before next_solve_s_; what changed until then waits in
  // dirty_links_ (kept) and pending_touched_ for the solve at resolve_at_s_.
  double interval_s_ = 0;
  double next_solve_s_ = -std::numeric_limits<double>::infinity();
  double resolve_at_s_ = std::numeric_limits<double>::infinity();
  bool changed_ = false;  // flows started or finished since the last reshare()
  std::vector<std::uint32_t> pending_touched_;
  ReplaySharingStats stats_;
};

}  // namespace collsim::detail
