// A hash table of small integer ids whose keys live elsewhere (in the caller's records): open
// addressing with linear probing, at most half full, deletion by backward shift (no tombstones).
// Each slot keeps the id and its key's 32-bit hash, so a probe asks the caller to compare keys
// only when the hashes agree.
//
// Why: the bundled max-min solver makes and drops a bundle of interchangeable flows at nearly
// every flow start and completion on a contended fabric (millions per run). A node-based map
// allocated and freed a node each time and kept a second copy of the key; here a lookup reads
// one slot in a small array, and the key is read from the bundle itself.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace collsim::detail {

class HashedIdTable {
 public:
  static constexpr std::uint32_t kAbsent = std::numeric_limits<std::uint32_t>::max();

  std::size_t size() const { return count_; }

  /// The id whose key has `hash` and satisfies `same_key(id)`, or kAbsent.
  template <class SameKey>
  std::uint32_t find(std::uint32_t hash, SameKey&& same_key) const {
    if (slots_.empty()) return kAbsent;
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.id == kAbsent) return kAbsent;
      if (s.hash == hash && same_key(s.id)) return s.id;
    }
  }

  /// Adds `id` under `hash`; its key must not be in the table yet.
  void insert(std::uint32_t id, std::uint32_t hash) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    place(Slot{id, hash});
    ++count_;
  }

  /// Removes `id`, which must be in the table under `hash`.
  void erase(std::uint32_t id, std::uint32_t hash) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t hole = hash & mask;
    while (slots_[hole].id != id) hole = (hole + 1) & mask;
    // Each later slot of the probe run moves into the hole, unless the hole lies before its
    // home slot (cyclically): it could then no longer be found from there.
    for (std::size_t j = (hole + 1) & mask; slots_[j].id != kAbsent; j = (j + 1) & mask) {
      const std::size_t home = slots_[j].hash & mask;
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --count_;
  }

 private:
  struct Slot {
    std::uint32_t id = kAbsent;
    std::uint32_t hash = 0;
  };
  void place(const Slot& slot) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = slot.hash & mask;
    while (slots_[i].id != kAbsent) i = (i + 1) & mask;
    slots_[i] = slot;
  }
  void grow() {
    std::vector<Slot> old(slots_.empty() ? 64 : 2 * slots_.size());
    old.swap(slots_);
    for (const Slot& s : old) {
      if (s.id != kAbsent) place(s);
    }
  }

  std::vector<Slot> slots_;  // a power of two long
  std::size_t count_ = 0;
};

}  // namespace collsim::detail
