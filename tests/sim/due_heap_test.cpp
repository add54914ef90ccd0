// The replay engine's indexed heap of flow completion dates, against a std::set reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "due_heap.hpp"

namespace collsim::detail {
namespace {

TEST(DueHeap, OrdersByDateThenId) {
  DueHeap heap;
  heap.set(4, 2.0);
  heap.set(1, 3.0);
  heap.set(7, 2.0);
  heap.set(2, 1.0);
  std::vector<std::uint32_t> order;
  while (!heap.empty()) {
    order.push_back(heap.top_id());
    heap.erase(heap.top_id());
  }
  EXPECT_EQ(order, (std::vector<std::uint32_t>{2, 4, 7, 1}));
}

TEST(DueHeap, MovesAnIdInsteadOfAddingIt) {
  DueHeap heap;
  heap.set(3, 5.0);
  heap.set(3, 1.0);
  heap.set(9, 2.0);
  EXPECT_EQ(heap.size(), 2u);
  EXPECT_EQ(heap.top_id(), 3u);
  heap.set(3, 4.0);
  EXPECT_EQ(heap.top_id(), 9u);
  heap.erase(9);
  heap.erase(9);  // absent: nothing happens
  EXPECT_FALSE(heap.contains(9));
  EXPECT_EQ(heap.top_id(), 3u);
  EXPECT_DOUBLE_EQ(heap.top_date(), 4.0);
}

// Random sets, moves and erases, checked after every operation against an ordered set.
TEST(DueHeap, AgreesWithAnOrderedSetOnRandomWorkloads) {
  std::mt19937_64 rng(99);
  for (int round = 0; round < 20; ++round) {
    DueHeap heap;
    std::set<std::pair<double, std::uint32_t>> ref;
    std::vector<double> date_of(64, -1.0);
    for (int op = 0; op < 3000; ++op) {
      const auto id = static_cast<std::uint32_t>(rng() % 64);
      const int what = static_cast<int>(rng() % 4);
      if (what == 0 && !ref.empty()) {
        const auto [date, top] = *ref.begin();
        ASSERT_EQ(heap.top_id(), top);
        ASSERT_EQ(heap.top_date(), date);
        heap.erase(top);
        ref.erase(ref.begin());
        date_of[top] = -1.0;
      } else if (what == 1) {
        heap.erase(id);
        if (date_of[id] >= 0) ref.erase({date_of[id], id});
        date_of[id] = -1.0;
      } else {
        // Few distinct dates, so ties are common.
        const double date = static_cast<double>(rng() % 16);
        heap.set(id, date);
        if (date_of[id] >= 0) ref.erase({date_of[id], id});
        ref.insert({date, id});
        date_of[id] = date;
      }
      ASSERT_EQ(heap.size(), ref.size());
      if (!ref.empty()) {
        ASSERT_EQ(heap.top_id(), ref.begin()->second);
      }
      for (std::uint32_t k = 0; k < 64; ++k) ASSERT_EQ(heap.contains(k), date_of[k] >= 0);
    }
  }
}

}  // namespace
}  // namespace collsim::detail
