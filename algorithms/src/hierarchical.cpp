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
// Each NIC carries 2 (N-1)/N * S/G bytes (S the buffer), the intra-node phases pay 2 (G-1)
// NVLink latencies. Two rows differ in the per-rail AllReduce:
//  * hierarchical: a ring across the nodes (2 (N-1) network latencies). It only ever uses
//    neighbouring nodes, which keeps its traffic inside a leaf of a leaf/spine fabric except at
//    leaf boundaries, so oversubscription barely touches it; its latency grows with N.
//  * hierarchical_rhd: recursive halving/doubling across the nodes (about 2 log2 N latencies, any
//    N, see recursive_halving_doubling.cpp). Recursive halving sends half the slice to its first
//    partner (rank k ^ N/2 on 2^k ranks), a quarter to the next, and so on, so its ranks are
//    placed on the nodes in the order of their exchanges (nodes_by_exchange_order; bit reversal
//    on 2^k nodes): the large exchanges are between neighbouring nodes, which share a leaf
//    switch, and only the small ones cross the spine. A permutation of the ranks changes no time
//    on a non-blocking fabric.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

std::string hierarchical_unsupported(Rank n, std::uint32_t gpus_per_node) {
  if (gpus_per_node == 0) {
    return "it needs the GPUs per node: a cluster topology's, or --gpus-per-node in schedule and verify";
  }
  if (n % gpus_per_node != 0) {
    return fmt::format("n must be a multiple of the {} GPUs per node", gpus_per_node);
  }
  if (n / gpus_per_node > 0xFFFF) return "more than 65535 nodes";
  return {};
}

namespace {

// Which node runs each rank of `flat` so that ranks that exchange early sit next to each other:
// its rounds are taken in order, and each transfer between two groups of ranks puts the groups
// side by side (the destination's after the source's). In recursive halving the first rounds
// carry the most bytes (half the slice, then a quarter, ...), so the largest exchanges end up
// between neighbouring nodes; on 2^k ranks the order is bit reversal.
std::vector<std::uint32_t> nodes_by_exchange_order(const Schedule& flat, std::uint32_t nodes) {
  std::vector<std::vector<std::uint32_t>> group_ranks(nodes);
  std::vector<std::uint32_t> group_of(nodes);
  for (std::uint32_t k = 0; k < nodes; ++k) {
    group_ranks[k] = {k};
    group_of[k] = k;
  }
  for (const Phase& phase : flat.phases) {
    for (const Transfer& t : phase.transfers()) {
      const std::uint32_t a = group_of[t.src], b = group_of[t.dst];
      if (a == b) continue;
      for (const std::uint32_t k : group_ranks[b]) group_of[k] = a;
      group_ranks[a].insert(group_ranks[a].end(), group_ranks[b].begin(), group_ranks[b].end());
      group_ranks[b].clear();
    }
  }
  // Groups that never exchanged (none in an AllReduce) follow in rank order.
  std::vector<std::uint32_t> node_of(nodes);
  std::uint32_t next = 0;
  for (std::uint32_t k = 0; k < nodes; ++k) {
    for (const std::uint32_t r : group_ranks[k]) node_of[r] = next++;
  }
  return node_of;
}

// Intra-node ring ReduceScatter, then `across` (a flat AllReduce generator) run on every rail at
// once over that rail's slice, then intra-node ring AllGather. The flat schedule is built once
// for the node count and copied onto each rail: rank k of it is node k's GPU on the rail, and
// its chunks are the rail's slice.
// `near_first`: the flat schedule's ranks run on the nodes of nodes_by_exchange_order (else rank k
// on node k).
Schedule hierarchical_over(const AlgorithmOptions& options, GeneratorFn across, const char* name, bool near_first) {
  const Rank n = options.n;
  const std::uint32_t g = options.gpus_per_node;
  if (const std::string why = hierarchical_unsupported(n, g); !why.empty()) {
    throw ScheduleError(fmt::format("{}: n = {} is not supported: {}", name, n, why));
  }
  const std::uint32_t nodes = n / g;
  Schedule flat;
  if (nodes > 1) {
    AlgorithmOptions per_rail;
    per_rail.n = nodes;
    flat = across(per_rail);
  }
  const std::uint32_t slice_chunks = nodes > 1 ? flat.num_chunks : 1;
  if (static_cast<std::uint64_t>(slice_chunks) * g > 0xFFFFFFFFull || slice_chunks > 0xFFFF) {
    throw ScheduleError(fmt::format("{}: n = {} gives slices of {} chunks, more than a transfer can carry", name, n,
                                    slice_chunks));
  }
  Schedule s;
  s.n = n;
  s.num_chunks = g * slice_chunks;
  s.ports = std::max<std::uint32_t>(1, flat.ports);

  std::vector<std::uint32_t> node_of(nodes);
  std::iota(node_of.begin(), node_of.end(), 0u);
  if (near_first) node_of = nodes_by_exchange_order(flat, nodes);
  std::vector<std::vector<Rank>> node_ranks(nodes);
  for (std::uint32_t node = 0; node < nodes; ++node) {
    for (std::uint32_t l = 0; l < g; ++l) node_ranks[node].push_back(node * g + l);
  }
  // Inside a node the ring's pieces are the G slices: local l ends up owning slice l.
  std::vector<RingSpec> intra;
  for (const auto& ranks : node_ranks) intra.push_back(RingSpec{ranks, 0, slice_chunks});

  if (g > 1) append_rings_reduce_scatter(s.add_phase("intra_reduce_scatter"), intra);
  for (const Phase& phase : flat.phases) {
    Phase& out = s.add_phase("inter_" + phase.name());
    out.reserve(phase.num_transfers() * g);
    for (std::size_t r = 0; r < phase.num_rounds(); ++r) {
      out.begin_round();
      for (std::uint32_t l = 0; l < g; ++l) {
        for (const Transfer& t : phase.round(r)) {
          out.add(node_of[t.src] * g + l, node_of[t.dst] * g + l, l * slice_chunks + t.chunk_begin, t.chunk_count, t.op);
        }
      }
    }
  }
  if (g > 1) append_rings_all_gather(s.add_phase("intra_all_gather"), intra);
  return s;
}

}  // namespace

Schedule generate_hierarchical(const AlgorithmOptions& options) {
  return hierarchical_over(options, &generate_ring, "hierarchical", false);
}

Schedule generate_hierarchical_rhd(const AlgorithmOptions& options) {
  return hierarchical_over(options, &generate_recursive_halving_doubling, "hierarchical_rhd", true);
}

}  // namespace collsim
