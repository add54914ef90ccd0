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
#include <algorithm>
#include <numeric>
#include <vector>

#include "collsim/algorithms/generators.hpp"

namespace collsim {

namespace {

// Reserves the transfers of `rings` in `phase`; returns how many rounds they take side by side.
std::size_t reserve_for_rings(Phase& phase, std::span<const RingSpec> rings) {
  std::size_t rounds = 0;
  std::size_t transfers = 0;
  for (const RingSpec& ring : rings) {
    rounds = std::max(rounds, ring.ranks.size() - 1);
    transfers += ring.ranks.size() * (ring.ranks.size() - 1);
  }
  phase.reserve(phase.num_transfers() + transfers);
  return rounds;
}

}  // namespace

void append_rings_reduce_scatter(Phase& phase, std::span<const RingSpec> rings) {
  const std::size_t rounds = reserve_for_rings(phase, rings);
  // In round r, ranks[i] sends its partial sum of piece (i - r - 1) mod k, so that after k-1
  // rounds ranks[i] ends up owning piece i (the convention StragglAR's phase 2 relies on).
  for (std::size_t r = 0; r < rounds; ++r) {
    phase.begin_round();
    for (const RingSpec& ring : rings) {
      const auto k = static_cast<std::uint32_t>(ring.ranks.size());
      if (r + 1 >= k) continue;
      for (std::uint32_t i = 0; i < k; ++i) {
        const std::uint32_t piece = (i + 2 * k - static_cast<std::uint32_t>(r) - 1) % k;
        phase.add(ring.ranks[i], ring.ranks[(i + 1) % k], ring.chunk_offset + piece * ring.piece_chunks,
                  ring.piece_chunks, Op::Reduce);
      }
    }
  }
}

void append_rings_all_gather(Phase& phase, std::span<const RingSpec> rings) {
  const std::size_t rounds = reserve_for_rings(phase, rings);
  // In round r, ranks[i] forwards piece (i - r) mod k: its own in round 0, then what it received.
  for (std::size_t r = 0; r < rounds; ++r) {
    phase.begin_round();
    for (const RingSpec& ring : rings) {
      const auto k = static_cast<std::uint32_t>(ring.ranks.size());
      if (r + 1 >= k) continue;
      for (std::uint32_t i = 0; i < k; ++i) {
        const std::uint32_t piece = (i + k - static_cast<std::uint32_t>(r)) % k;
        phase.add(ring.ranks[i], ring.ranks[(i + 1) % k], ring.chunk_offset + piece * ring.piece_chunks,
                  ring.piece_chunks, Op::Copy);
      }
    }
  }
}

void append_ring_reduce_scatter(Phase& phase, std::span<const Rank> ranks, std::uint32_t chunk_offset) {
  const RingSpec ring{ranks, chunk_offset, 1};
  append_rings_reduce_scatter(phase, std::span<const RingSpec>(&ring, 1));
}

void append_ring_all_gather(Phase& phase, std::span<const Rank> ranks, std::uint32_t chunk_offset) {
  const RingSpec ring{ranks, chunk_offset, 1};
  append_rings_all_gather(phase, std::span<const RingSpec>(&ring, 1));
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
