// Multi-channel ring AllReduce across nodes, as NCCL builds it on multi-NIC clusters: G channels
// (G = GPUs per node, one per NIC rail), each a ring over all n = N x G GPUs that carries 1/G of
// the buffer; the G rings run side by side (G ports: every GPU sends and receives one message per
// channel per round). Each channel is a plain ring AllReduce, ReduceScatter then AllGather, over
// n pieces of its slice (Patarasuk & Yuan, JPDC 2009; NCCL's ring with one channel per NIC).
//
// Ring order of channel c (rank = node * G + local), with c' = (c + 1) mod G:
//  * an even node k is entered at its GPU c and left from its GPU c'; between them the ring
//    chains the node's other GPUs over NVLink in the order c+2, c+3, ..., c+G-1 (mod G):
//        k*G+c, k*G+(c+2), ..., k*G+(c+G-1), k*G+c'
//  * an odd node is walked in the opposite order, entered at c' and left from c:
//        k*G+c', k*G+(c+G-1), ..., k*G+(c+2), k*G+c
//  * then the next node, and after node N-1 back to node 0.
// So every NIC hop of channel c runs on one rail (c' from an even node to the next, c from an
// odd one), entering and leaving a node through the same rail's GPU on either side of the hop;
// only for odd N the closing hop N-1 -> 0 goes from rail c' to rail c. Over the G channels each
// GPU's NIC sends exactly one channel's share and receives one: each NIC carries 2 (n-1)/n * S/G.
// G = 1 is the flat ring; with G = 2 the node's two GPUs are both entry and exit.
//
//   N = 2, G = 4, channel 0:  node 0: 0 -> 2 -> 3 -> 1 ==rail 1==> node 1: 5 -> 7 -> 6 -> 4
//                             node 1's 4 ==rail 0==> node 0's 0
//
// Chunks: num_chunks = G * n; channel c's slice is chunks [c n, (c + 1) n), one per ring piece.
// Two phases, "reduce_scatter" and "all_gather", of n - 1 rounds each. The ring pays 2 (n - 1)
// latencies, as NCCL's ring does; its per-NIC bytes equal the hierarchical algorithms'.
#include <fmt/format.h>

#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

std::vector<Rank> ring_multichannel_order(Rank n, std::uint32_t gpus_per_node, std::uint32_t channel) {
  const std::uint32_t g = gpus_per_node;
  const std::uint32_t nodes = n / g;
  const std::uint32_t next = (channel + 1) % g;
  // The node-local walk of an even node: c, c+2, ..., c+G-1, c' (c alone when G = 1).
  std::vector<std::uint32_t> walk{channel};
  for (std::uint32_t i = 2; i < g; ++i) walk.push_back((channel + i) % g);
  if (g > 1) walk.push_back(next);
  std::vector<Rank> order;
  order.reserve(n);
  for (std::uint32_t node = 0; node < nodes; ++node) {
    if (node % 2 == 0) {
      for (const std::uint32_t l : walk) order.push_back(node * g + l);
    } else {
      for (auto it = walk.rbegin(); it != walk.rend(); ++it) order.push_back(node * g + *it);
    }
  }
  return order;
}

Schedule generate_ring_multichannel(const AlgorithmOptions& options) {
  const Rank n = options.n;
  const std::uint32_t g = options.gpus_per_node;
  if (const std::string why = hierarchical_unsupported(n, g); !why.empty()) {
    throw ScheduleError(fmt::format("ring_multichannel: n = {} is not supported: {}", n, why));
  }
  if (static_cast<std::uint64_t>(n) * g > 0xFFFFFFFFull) {
    throw ScheduleError(fmt::format("ring_multichannel: n = {} with {} channels needs more than 2^32 chunks", n, g));
  }
  Schedule s;
  s.n = n;
  s.num_chunks = n * g;
  s.ports = g;
  std::vector<std::vector<Rank>> orders;
  orders.reserve(g);
  for (std::uint32_t c = 0; c < g; ++c) orders.push_back(ring_multichannel_order(n, g, c));
  std::vector<RingSpec> rings;
  for (std::uint32_t c = 0; c < g; ++c) rings.push_back(RingSpec{orders[c], c * n, 1});
  append_rings_reduce_scatter(s.add_phase("reduce_scatter"), rings);
  append_rings_all_gather(s.add_phase("all_gather"), rings);
  return s;
}

}  // namespace collsim
