// The bundled max-min solver's two ways of finding the next level of the filling: a scan of the
// component's links (small components) and a lazy heap (large ones). The scan claims to take
// exactly the links the heap takes, so the dates must agree to the bit, not just to rounding:
// on a congested fabric a last-bit difference changes which flows finish together.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "collsim/models/topology.hpp"
#include "maxmin_network.hpp"
#include "maxmin_network_bundled.hpp"
#include "sim_test_support.hpp"

namespace collsim::detail {
namespace {

// Adds the flow src -> dst as the replay engine does: the route's links that can bind, its
// narrowest link as the cap, the route latency as the sharing penalty.
void add_flow(BundledMaxMinNetwork& net, const Topology& topo, const LinkTable& links, double now_s, double bytes,
              std::uint32_t src, std::uint32_t dst, std::uint64_t tag) {
  std::vector<std::uint32_t> route;
  topo.route_into(src, dst, route);
  double latency_s = 0;
  double cap_Bps = std::numeric_limits<double>::infinity();
  std::array<std::uint32_t, BundledMaxMinNetwork::kMaxRoute> binding{};
  std::size_t count = 0;
  for (const std::uint32_t l : route) {
    latency_s += links.latency_s[l];
    cap_Bps = std::min(cap_Bps, links.bandwidth_Bps[l]);
    if (links.binding[l] != 0) binding[count++] = l;
  }
  net.add(now_s, bytes, cap_Bps, latency_s > 0 ? latency_s : 1.0, std::span<const std::uint32_t>(binding.data(), count),
          tag);
}

// Random arrivals and completions on oversubscribed clusters and dgx1 (routes of different
// latencies, so bundles of different weights share links): the scanning network and the heap
// network must date every completion identically and finish the same flows in the same order.
TEST(MaxMinFill, ScanTakesTheSameLevelsAsTheHeap) {
  std::mt19937_64 rng(2718);
  const auto pick = [&rng](std::uint64_t bound) { return static_cast<std::uint32_t>(rng() % bound); };
  std::uint64_t completions = 0;
  for (int c = 0; c < 200; ++c) {
    const Topology topo = test::random_shared_topology(rng, c % 4 == 0, 8, 57);
    const LinkTable links(topo);
    BundledMaxMinNetwork scan(links, true, std::numeric_limits<std::size_t>::max());
    BundledMaxMinNetwork heap(links, true, 0);
    double now_s = 0;
    std::uint64_t tag = 0;
    const std::string what = "case " + std::to_string(c) + " " + topo.name + " n=" + std::to_string(topo.n);
    for (int step = 0; step < 300; ++step) {
      // A few flows start at this date (often several: a round's transfers start together).
      const std::uint32_t starts = scan.idle() || pick(2) == 0 ? 1 + pick(6) : 0;
      for (std::uint32_t k = 0; k < starts; ++k) {
        const std::uint32_t src = pick(topo.n);
        const std::uint32_t dst = (src + 1 + pick(topo.n - 1)) % topo.n;
        const double bytes = pick(3) == 0 ? 1 << 20 : 1e5 * (1 + pick(100));  // equal sizes tie
        add_flow(scan, topo, links, now_s, bytes, src, dst, tag);
        add_flow(heap, topo, links, now_s, bytes, src, dst, tag);
        ++tag;
      }
      if (scan.needs_reshare()) scan.reshare(now_s);
      if (heap.needs_reshare()) heap.reshare(now_s);
      ASSERT_EQ(scan.idle(), heap.idle()) << what << " step " << step;
      if (scan.idle()) continue;
      ASSERT_EQ(scan.next_due_s(), heap.next_due_s()) << what << " step " << step;
      now_s = scan.next_due_s();
      // Everything due at this date completes before the next reshare, as in the engine.
      while (!scan.idle() && scan.next_due_s() <= now_s) {
        ASSERT_FALSE(heap.idle()) << what << " step " << step;
        ASSERT_EQ(scan.next_due_s(), heap.next_due_s()) << what << " step " << step;
        ASSERT_EQ(scan.take_due(), heap.take_due()) << what << " step " << step;
        ++completions;
      }
    }
  }
  EXPECT_GT(completions, 10000u);
}

}  // namespace
}  // namespace collsim::detail
