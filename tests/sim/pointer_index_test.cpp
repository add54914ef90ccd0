// The simgrid engine's address index against std::unordered_map under random insert/take
// sequences, including the growth steps and clusters that wrap around the end of the table.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "pointer_index.hpp"

namespace {

using collsim::detail::PointerIndex;

TEST(PointerIndex, TakeReturnsWhatWasInsertedAndForgetsIt) {
  PointerIndex index;
  int a = 0;
  int b = 0;
  index.insert(&a, 7);
  index.insert(&b, 9);
  EXPECT_EQ(index.size(), 2u);
  EXPECT_EQ(index.take(&b), 9u);
  EXPECT_EQ(index.take(&b), std::nullopt);
  EXPECT_EQ(index.take(&a), 7u);
  EXPECT_EQ(index.size(), 0u);
}

TEST(PointerIndex, AgreesWithUnorderedMapOnRandomWorkloads) {
  // Fake addresses with the spacing of heap objects; several working-set sizes so the table
  // grows, shrinks its load and reuses slots (erasure must keep every probe path intact).
  std::mt19937_64 rng(42);
  for (const std::size_t working_set : {3u, 40u, 1000u, 20000u}) {
    PointerIndex index;
    std::unordered_map<const void*, std::uint32_t> reference;
    std::vector<const void*> live;
    std::uint64_t next_address = 0x10000;
    for (std::size_t step = 0; step < 20 * working_set + 1000; ++step) {
      const bool add = live.size() < working_set && (live.empty() || rng() % 3 != 0);
      if (add) {
        next_address += 16 * (1 + rng() % 8);
        const auto* key = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(next_address));
        const auto value = static_cast<std::uint32_t>(rng());
        index.insert(key, value);
        reference.emplace(key, value);
        live.push_back(key);
      } else {
        const std::size_t pick = rng() % live.size();
        const void* key = live[pick];
        live[pick] = live.back();
        live.pop_back();
        ASSERT_EQ(index.take(key), reference.at(key)) << "working set " << working_set << ", step " << step;
        reference.erase(key);
      }
      ASSERT_EQ(index.size(), reference.size());
    }
    for (const void* key : live) EXPECT_EQ(index.take(key), reference.at(key));
    EXPECT_EQ(index.size(), 0u);
  }
}

}  // namespace
