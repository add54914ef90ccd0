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
  double top_date() const { return heap_.front().date; }
  std::uint32_t top_id() const { return heap_.front().id; }

  /// Puts `id` in the heap at `date`, or moves it there if it is already in.
  void set(std::uint32_t id, double date) {
    if (id >= pos_.size()) pos_.resize(id + 1, kAbsent);
    if (pos_[id] == kAbsent) {
      pos_[id] = static_cast<std::uint32_t>(heap_.size());
      heap_.push_back(Node{date, id});
      up(pos_[id]);
      return;
    }
    const std::uint32_t at = pos_[id];
    const double old = heap_[at].date;
    heap_[at].date = date;
    if (date < old) {
      up(at);
    } else {
      down(at);
    }
  }

  /// Takes `id` out of the heap (nothing happens if it is not in).
  void erase(std::uint32_t id) {
    if (!contains(id)) return;
    const std::uint32_t at = pos_[id];
    const Node last = heap_.back();
    heap_.pop_back();
    pos_[id] = kAbsent;
    if (last.id == id) return;
    place(at, last);
    up(at);
    down(pos_[last.id]);
  }

 private:
  // The date sits next to its id in the heap: a sift compares dates without a second lookup
  // per level (on a contended fabric the re-dating sifts are a tenth of a run).
  struct Node {
    double date;
    std::uint32_t id;
  };
  static bool before(const Node& a, const Node& b) { return a.date < b.date || (a.date == b.date && a.id < b.id); }
  void place(std::uint32_t at, const Node& node) {
    heap_[at] = node;
    pos_[node.id] = at;
  }
  void up(std::uint32_t at) {
    const Node node = heap_[at];
    while (at > 0) {
      const std::uint32_t parent = (at - 1) / 2;
      if (!before(node, heap_[parent])) break;
      place(at, heap_[parent]);
      at = parent;
    }
    place(at, node);
  }
  void down(std::uint32_t at) {
    const Node node = heap_[at];
    const auto count = static_cast<std::uint32_t>(heap_.size());
    for (;;) {
      std::uint32_t child = 2 * at + 1;
      if (child >= count) break;
      if (child + 1 < count && before(heap_[child + 1], heap_[child])) ++child;
      if (!before(heap_[child], node)) break;
      place(at, heap_[child]);
      at = child;
    }
    place(at, node);
  }

  std::vector<Node> heap_;           // heap-ordered by (date, id)
  std::vector<std::uint32_t> pos_;   // per id: index in heap_, or kAbsent
};

}  // namespace collsim::detail
