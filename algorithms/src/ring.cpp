// Ring AllReduce: ring ReduceScatter followed by ring AllGather, each n-1 rounds over n chunks.
// Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of workstations"
// (JPDC 2009); the algorithm NCCL uses for large buffers.
//
// One ReduceScatter round (n = 4, round 0): rank i sends chunk (i - r) mod n to rank i+1,
// which adds it to its own copy.
//
//     r0 --c0--> r1 --c1--> r2 --c2--> r3 --c3--> r0
//
// After n-1 such rounds rank i holds chunk (i+1) mod n fully reduced; the AllGather then
// circulates the reduced chunks with copies in the same direction.
#include <numeric>
#include <vector>

#include "collsim/algorithms/generators.hpp"

namespace collsim {

void append_ring_reduce_scatter(Phase& phase, std::span<const Rank> ranks,
                                std::uint32_t chunk_offset) {
  const auto k = static_cast<std::uint32_t>(ranks.size());
  phase.reserve(phase.num_transfers() + static_cast<std::size_t>(k) * (k - 1));
  // In round r, ranks[i] sends its partial sum of chunk (i - r - 1) mod k, so that after k-1
  // rounds ranks[i] ends up owning chunk i (the convention StragglAR's phase 2 relies on).
  for (std::uint32_t r = 0; r + 1 < k; ++r) {
    phase.begin_round();
    for (std::uint32_t i = 0; i < k; ++i) {
      const std::uint32_t chunk = (i + 2 * k - r - 1) % k;
      phase.add(ranks[i], ranks[(i + 1) % k], chunk_offset + chunk, 1, Op::Reduce);
    }
  }
}

void append_ring_all_gather(Phase& phase, std::span<const Rank> ranks, std::uint32_t chunk_offset) {
  const auto k = static_cast<std::uint32_t>(ranks.size());
  phase.reserve(phase.num_transfers() + static_cast<std::size_t>(k) * (k - 1));
  // In round r, ranks[i] forwards chunk (i - r) mod k: its own in round 0, then what it received.
  for (std::uint32_t r = 0; r + 1 < k; ++r) {
    phase.begin_round();
    for (std::uint32_t i = 0; i < k; ++i) {
      const std::uint32_t chunk = (i + k - r) % k;
      phase.add(ranks[i], ranks[(i + 1) % k], chunk_offset + chunk, 1, Op::Copy);
    }
  }
}

std::string ring_unsupported(Rank /*n*/) { return {}; }

Schedule generate_ring(const AlgorithmOptions& options) {
  Schedule s;
  s.n = options.n;
  s.num_chunks = options.n;
  std::vector<Rank> ranks(options.n);
  std::iota(ranks.begin(), ranks.end(), Rank{0});
  append_ring_reduce_scatter(s.add_phase("reduce_scatter"), ranks, 0);
  append_ring_all_gather(s.add_phase("all_gather"), ranks, 0);
  return s;
}

}  // namespace collsim
