// Hierarchical (2D) AllReduce for multi-node clusters: ReduceScatter inside every node, then one
// AllReduce per rail across the nodes, then AllGather inside every node. The classic two-level
// scheme of MPI libraries (e.g. Traff & Hunold, "Decomposing MPI collectives for exploiting
// multi-lane communication", CLUSTER 2020; Jia et al., "Highly scalable deep learning training
// system with mixed-precision", 2018, on hierarchical all-reduce), and what NCCL's ring does in
// effect when every NIC rail carries its own channel.
//
// n = N nodes x G GPUs per node; rank = node * G + local. The buffer is G slices of N chunks.
// Local rank l of every node owns slice l; the GPUs with local index l on all nodes form rail l.
//
//   node 0: [g0 g1 g2 g3]      1. intra-node ring ReduceScatter of the G slices (NVLink)
//   node 1: [g0 g1 g2 g3]      2. rail l: ring ReduceScatter of slice l's N chunks across nodes
//   node 2: [g0 g1 g2 g3]      3. rail l: ring AllGather of them (NIC l of every node)
//             |  |  |  |       4. intra-node ring AllGather of the slices
//           rail 0 .. rail 3
//
// Each NIC carries 2 (N-1)/N * S/G bytes (S the buffer), the inter-node phases pay 2 (N-1)
// network latencies, the intra-node ones 2 (G-1) NVLink latencies. Rings across nodes rather than
// recursive halving/doubling: they work for every node count with the bandwidth-optimal volume
// and only ever use neighbouring nodes, which keeps their traffic inside a leaf on a leaf/spine
// fabric except at the leaf boundaries.
#include <fmt/format.h>

#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

std::string hierarchical_unsupported(Rank n, std::uint32_t gpus_per_node) {
  if (gpus_per_node == 0) {
    return "it needs the GPUs per node (from a cluster topology, or the gpus_per_node option)";
  }
  if (n % gpus_per_node != 0) {
    return fmt::format("n must be a multiple of the {} GPUs per node", gpus_per_node);
  }
  if (n / gpus_per_node > 0xFFFF) return "more than 65535 nodes";
  return {};
}

Schedule generate_hierarchical(const AlgorithmOptions& options) {
  const Rank n = options.n;
  const std::uint32_t g = options.gpus_per_node;
  if (const std::string why = hierarchical_unsupported(n, g); !why.empty()) {
    throw ScheduleError(fmt::format("hierarchical: n = {} is not supported: {}", n, why));
  }
  const std::uint32_t nodes = n / g;
  Schedule s;
  s.n = n;
  s.num_chunks = g * nodes;

  // Rank lists: one per node (in local order) and one per rail (in node order).
  std::vector<std::vector<Rank>> node_ranks(nodes);
  std::vector<std::vector<Rank>> rail_ranks(g);
  for (std::uint32_t node = 0; node < nodes; ++node) {
    for (std::uint32_t l = 0; l < g; ++l) {
      node_ranks[node].push_back(node * g + l);
      rail_ranks[l].push_back(node * g + l);
    }
  }
  // Inside a node the pieces are the G slices of N chunks each; on rail l they are the N chunks
  // of slice l.
  std::vector<RingSpec> intra;
  for (const auto& ranks : node_ranks) intra.push_back(RingSpec{ranks, 0, nodes});
  std::vector<RingSpec> inter;
  for (std::uint32_t l = 0; l < g; ++l) inter.push_back(RingSpec{rail_ranks[l], l * nodes, 1});

  if (g > 1) append_rings_reduce_scatter(s.add_phase("intra_reduce_scatter"), intra);
  if (nodes > 1) {
    append_rings_reduce_scatter(s.add_phase("inter_reduce_scatter"), inter);
    append_rings_all_gather(s.add_phase("inter_all_gather"), inter);
  }
  if (g > 1) append_rings_all_gather(s.add_phase("intra_all_gather"), intra);
  return s;
}

}  // namespace collsim
