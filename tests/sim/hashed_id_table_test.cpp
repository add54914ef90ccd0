// The bundled solver's table of shared bundles by key, against a std::unordered_map reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "hashed_id_table.hpp"

namespace collsim::detail {
namespace {

// Keys live outside the table, as a bundle's key does: key_of[id].
struct Keys {
  std::vector<std::uint64_t> key_of;
  std::uint32_t (*hash)(std::uint64_t);
  std::uint32_t find(const HashedIdTable& t, std::uint64_t key) const {
    return t.find(hash(key), [&](std::uint32_t id) { return key_of[id] == key; });
  }
};

// Random inserts and erases (ids reused as the solver reuses bundles), with every key looked up
// after each step: erasing by backward shift must leave every other key reachable.
void churn(std::uint32_t (*hash)(std::uint64_t), std::uint64_t key_range, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  Keys keys{{}, hash};
  HashedIdTable table;
  std::unordered_map<std::uint64_t, std::uint32_t> reference;
  std::vector<std::uint32_t> free_ids;
  for (int step = 0; step < 4000; ++step) {
    const std::uint64_t key = rng() % key_range;
    const auto it = reference.find(key);
    if (it == reference.end()) {
      std::uint32_t id;
      if (free_ids.empty()) {
        id = static_cast<std::uint32_t>(keys.key_of.size());
        keys.key_of.push_back(key);
      } else {
        id = free_ids.back();
        free_ids.pop_back();
        keys.key_of[id] = key;
      }
      table.insert(id, hash(key));
      reference.emplace(key, id);
    } else {
      table.erase(it->second, hash(key));
      free_ids.push_back(it->second);
      reference.erase(it);
    }
    ASSERT_EQ(table.size(), reference.size());
    for (std::uint64_t k = 0; k < key_range; ++k) {
      const auto r = reference.find(k);
      ASSERT_EQ(keys.find(table, k), r == reference.end() ? HashedIdTable::kAbsent : r->second)
          << "key " << k << " after step " << step;
    }
  }
}

TEST(HashedIdTable, FindsWhatWasInsertedAndNothingErased) {
  churn([](std::uint64_t k) { return static_cast<std::uint32_t>((k * 0x9e3779b97f4a7c15ULL) >> 32); }, 300, 1);
}

TEST(HashedIdTable, LongProbeRunsWrapAroundAndShiftBack) {
  // Few distinct hashes, all near the end of a 64-slot table: long runs that wrap, and equal
  // hashes whose keys differ (the caller's comparison decides).
  churn([](std::uint64_t k) { return static_cast<std::uint32_t>(60 + k % 5); }, 31, 2);
  // Growth past the first size while runs are long.
  churn([](std::uint64_t k) { return static_cast<std::uint32_t>(k % 7); }, 200, 3);
}

}  // namespace
}  // namespace collsim::detail
