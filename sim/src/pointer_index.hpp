// A map from object addresses to small integers, for the simgrid engine's flows in flight: it is
// inserted into, looked up and erased once per simulated transfer (millions per run), where
// std::unordered_map's node allocations and rehash checks showed up in profiles. Open addressing
// with linear probing; erasure shifts the following entries back, so there are no tombstones and
// probe sequences stay short however many insert/erase cycles run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace collsim::detail {

class PointerIndex {
 public:
  PointerIndex() { keys_.assign(kInitialCapacity, nullptr); values_.assign(kInitialCapacity, 0); }

  /// Adds key -> value. Precondition: key is not null and not present.
  void insert(const void* key, std::uint32_t value) {
    if (2 * (size_ + 1) > keys_.size()) grow();
    std::size_t i = home(key);
    while (keys_[i] != nullptr) i = (i + 1) & mask();
    keys_[i] = key;
    values_[i] = value;
    ++size_;
  }

  /// Removes key and returns its value; nullopt if absent.
  std::optional<std::uint32_t> take(const void* key) {
    std::size_t i = home(key);
    while (keys_[i] != key) {
      if (keys_[i] == nullptr) return std::nullopt;
      i = (i + 1) & mask();
    }
    const std::uint32_t value = values_[i];
    // Backward shift: move later entries of the cluster into the hole when the hole lies on
    // their probe path (between their home slot and their current slot, cyclically).
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask(); keys_[j] != nullptr; j = (j + 1) & mask()) {
      const std::size_t h = home(keys_[j]);
      const bool reachable = hole <= j ? (h <= hole || h > j) : (h <= hole && h > j);
      if (!reachable) continue;
      keys_[hole] = keys_[j];
      values_[hole] = values_[j];
      hole = j;
    }
    keys_[hole] = nullptr;
    --size_;
    return value;
  }

  std::size_t size() const { return size_; }

 private:
  static constexpr std::size_t kInitialCapacity = 64;  // 2^6

  std::size_t mask() const { return keys_.size() - 1; }
  std::size_t home(const void* key) const {
    // Fibonacci hashing of the address: the top bits of the product are the well-mixed ones.
    const auto bits = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(key));
    return static_cast<std::size_t>((bits * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow() {
    std::vector<const void*> old_keys(2 * keys_.size(), nullptr);
    std::vector<std::uint32_t> old_values(2 * keys_.size(), 0);
    old_keys.swap(keys_);
    old_values.swap(values_);
    --shift_;
    size_ = 0;
    for (std::size_t i = 0; i < old_keys.size(); ++i) {
      if (old_keys[i] != nullptr) insert(old_keys[i], old_values[i]);
    }
  }

  std::vector<const void*> keys_;
  std::vector<std::uint32_t> values_;
  std::size_t size_ = 0;
  unsigned shift_ = 64 - 6;  // 64 - log2(capacity)
};

}  // namespace collsim::detail
