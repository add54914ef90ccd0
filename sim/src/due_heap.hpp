// An indexed binary min-heap of due dates: each id (a small integer, e.g. a flow slot) is in
// the heap at most once, and its date can be moved in place.
//
// Why: the replay engine re-dates thousands of flow completions at every bandwidth reshare on a
// contended fabric. A plain priority queue with "stale entry" versions grows by one entry per
// re-dating (tens of millions per run) and every pop walks that large heap; here the heap holds
// only the flows in flight, and a re-dating is one sift. Ties are broken by id, so the order of
// equal dates is deterministic.
#pragma once

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace collsim::detail {

class DueHeap {
 public:
  static constexpr std::uint32_t kAbsent = std::numeric_limits<std::uint32_t>::max();

  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  bool contains(std::uint32_t id) const { return id < pos_.size() && pos_[id] != kAbsent; }
  /// The smallest date and its id; the heap must not be empty.
  double top_date() const { return date_[heap_.front()]; }
  std::uint32_t top_id() const { return heap_.front(); }

  /// Puts `id` in the heap at `date`, or moves it there if it is already in.
  void set(std::uint32_t id, double date) {
    if (id >= pos_.size()) {
      pos_.resize(id + 1, kAbsent);
      date_.resize(id + 1, 0.0);
    }
    if (pos_[id] == kAbsent) {
      pos_[id] = static_cast<std::uint32_t>(heap_.size());
      heap_.push_back(id);
      date_[id] = date;
      up(pos_[id]);
      return;
    }
    const double old = date_[id];
    date_[id] = date;
    if (date < old) {
      up(pos_[id]);
    } else {
      down(pos_[id]);
    }
  }

  /// Takes `id` out of the heap (nothing happens if it is not in).
  void erase(std::uint32_t id) {
    if (!contains(id)) return;
    const std::uint32_t at = pos_[id];
    const std::uint32_t last = heap_.back();
    heap_.pop_back();
    pos_[id] = kAbsent;
    if (last == id) return;
    heap_[at] = last;
    pos_[last] = at;
    up(at);
    down(pos_[last]);
  }

 private:
  bool before(std::uint32_t a, std::uint32_t b) const {
    return date_[a] < date_[b] || (date_[a] == date_[b] && a < b);
  }
  void place(std::uint32_t at, std::uint32_t id) {
    heap_[at] = id;
    pos_[id] = at;
  }
  void up(std::uint32_t at) {
    const std::uint32_t id = heap_[at];
    while (at > 0) {
      const std::uint32_t parent = (at - 1) / 2;
      if (!before(id, heap_[parent])) break;
      place(at, heap_[parent]);
      at = parent;
    }
    place(at, id);
  }
  void down(std::uint32_t at) {
    const std::uint32_t id = heap_[at];
    const auto count = static_cast<std::uint32_t>(heap_.size());
    for (;;) {
      std::uint32_t child = 2 * at + 1;
      if (child >= count) break;
      if (child + 1 < count && before(heap_[child + 1], heap_[child])) ++child;
      if (!before(heap_[child], id)) break;
      place(at, heap_[child]);
      at = child;
    }
    place(at, id);
  }

  std::vector<std::uint32_t> heap_;  // ids, heap-ordered by (date, id)
  std::vector<std::uint32_t> pos_;   // per id: index in heap_, or kAbsent
  std::vector<double> date_;         // per id: its date while in the heap
};

}  // namespace collsim::detail
