// Schedule generators, one source file each. Each is pure: (options) -> Schedule, built with the
// straggler (if the algorithm cares) at rank n-1. Call them through generate_schedule(), which
// checks support and relabels; the support functions return "" or the reason n is unsupported.
#pragma once

#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"

namespace collsim {

Schedule generate_ring(const AlgorithmOptions& options);
std::string ring_unsupported(Rank n);

Schedule generate_recursive_halving_doubling(const AlgorithmOptions& options);
std::string recursive_halving_doubling_unsupported(Rank n);

Schedule generate_recursive_halving_doubling_fold(const AlgorithmOptions& options);
std::string recursive_halving_doubling_fold_unsupported(Rank n);

Schedule generate_recursive_doubling(const AlgorithmOptions& options);
std::string recursive_doubling_unsupported(Rank n);

Schedule generate_binomial_tree(const AlgorithmOptions& options);
std::string binomial_tree_unsupported(Rank n);

Schedule generate_double_binary_tree(const AlgorithmOptions& options);
std::string double_binary_tree_unsupported(Rank n);

Schedule generate_direct(const AlgorithmOptions& options);
std::string direct_unsupported(Rank n);

Schedule generate_straggler_tree(const AlgorithmOptions& options);
std::string straggler_tree_unsupported(Rank n);

/// Intra-node ring ReduceScatter, per-rail inter-node ring AllReduce, intra-node AllGather.
/// Throws ScheduleError unless options.gpus_per_node divides n.
Schedule generate_hierarchical(const AlgorithmOptions& options);
/// The same with recursive halving/doubling as the per-rail AllReduce.
Schedule generate_hierarchical_rhd(const AlgorithmOptions& options);
/// Empty when n = nodes x gpus_per_node (gpus_per_node > 0, at most 65535 nodes), else why not.
std::string hierarchical_unsupported(Rank n, std::uint32_t gpus_per_node);
/// NCCL's multi-channel ring across nodes: one ring over all n GPUs per NIC rail (G channels,
/// G ports), each carrying 1/G of the buffer; ring order in ring_multichannel.cpp. Throws
/// ScheduleError unless options.gpus_per_node divides n.
Schedule generate_ring_multichannel(const AlgorithmOptions& options);
/// The ring order of `channel` (0 .. gpus_per_node - 1): every rank once, node by node.
std::vector<Rank> ring_multichannel_order(Rank n, std::uint32_t gpus_per_node, std::uint32_t channel);
/// NCCL's tree across nodes: NVLink chains inside nodes, a double binary tree across them, one
/// tree pair per NIC rail (options.pipeline_chunks per node slice, even, half per tree; see
/// nccl_tree.cpp). Throws ScheduleError unless options.gpus_per_node divides n, or for an odd depth.
Schedule generate_nccl_tree(const AlgorithmOptions& options);
/// Straggler-aware cluster AllReduce (docs/stragglar_cluster.md): everything not needing rank
/// n-1 is reduced before it arrives, then one pipelined two-tree broadcast per rail from its node.
/// options.pipeline_chunks = chunks per slice (even, >= 2). Throws ScheduleError unless
/// options.gpus_per_node divides n, or for a bad pipeline_chunks. One node: stragglar.
Schedule generate_stragglar_cluster(const AlgorithmOptions& options);
/// Empty when n = nodes x gpus_per_node, else why not.
std::string stragglar_cluster_unsupported(Rank n, std::uint32_t gpus_per_node);
/// The pipeline depth (chunks per slice, even, 2 to 128) that minimises the time after the
/// arrival, (P + D + 2) (2 alpha + S / (G P B)), for the options' size and network numbers:
/// P = sqrt((D + 2) S / (2 G B alpha)) steps, D the trees' depth. Preconditions: those numbers
/// and gpus_per_node > 0 (generate_schedule() only calls it then).
std::uint32_t stragglar_cluster_depth(const AlgorithmOptions& options);

/// NCCL's NVLS + tree across nodes: reduce-scatter through each node's switch rank, a double
/// binary tree per NIC rail across the nodes, all-gather by multicast (nvls_tree.cpp).
/// options.pipeline_chunks = pieces of the buffer (even). Throws ScheduleError unless
/// options.gpus_per_node divides n, or for an odd depth.
Schedule generate_nvls_tree(const AlgorithmOptions& options);
/// Empty when n = nodes x gpus_per_node and the switch can reduce (or that is not known).
std::string nvls_tree_unsupported(Rank n, const NConstraintContext& context);
/// The pipeline depth (pieces, even, 2 to 256) that minimises (C + L)(alpha + S / (G C B)),
/// C = P / 2 steps after L of fill and drain: C = sqrt(L S / (G B alpha)), at most 48 x 16384 / n
/// steps (a transfer budget: about 10 M at 16,384 GPUs). Preconditions: the
/// options' sizing and gpus_per_node > 0 (generate_schedule() only calls it then).
std::uint32_t nvls_tree_depth(const AlgorithmOptions& options);

/// In-switch reduction and multicast over one switch rank, pipelined over options.pipeline_chunks.
Schedule generate_nvls(const AlgorithmOptions& options);
/// nvls pipeline depth for options.size_bytes on the sized link and switch efficiency.
std::uint32_t nvls_depth(const AlgorithmOptions& options);
/// Empty unless the context says the switch cannot reduce or the GPUs span several nodes.
std::string nvls_unsupported(Rank n, const NConstraintContext& context);

Schedule generate_stragglar(const AlgorithmOptions& options);
std::string stragglar_unsupported(Rank n);

/// StragglAR for options.late_ranks ranks found late at run time (stragglar_online.cpp).
/// Throws ScheduleError for late_ranks outside 1..n-1.
Schedule generate_stragglar_online(const AlgorithmOptions& options);
std::string stragglar_online_unsupported(Rank n);

/// One ring of append_rings_*: `ranks` in ring order; piece i of the ring is the chunks
/// [chunk_offset + i * piece_chunks, chunk_offset + (i + 1) * piece_chunks).
struct RingSpec {
  std::span<const Rank> ranks;
  std::uint32_t chunk_offset = 0;
  std::uint32_t piece_chunks = 1;
};
/// Appends ring ReduceScatters that run side by side in the same rounds (max ring size - 1 of
/// them): afterwards ranks[i] of each ring holds its piece i reduced over the ring's ranks. The
/// rings must not share a rank. Used by the hierarchical algorithms (one ring per node, then one
/// per rail).
void append_rings_reduce_scatter(Phase& phase, std::span<const RingSpec> rings);
/// The AllGather counterpart: starting with ranks[i] holding piece i, every rank of each ring
/// ends holding all of the ring's pieces.
void append_rings_all_gather(Phase& phase, std::span<const RingSpec> rings);

/// Appends to `phase` a ring ReduceScatter among `ranks` (in ring order) over chunks
/// [chunk_offset, chunk_offset + ranks.size()), after which ranks[i] holds chunk
/// chunk_offset + i reduced over all of `ranks`. ranks.size()-1 rounds. Shared by ring,
/// stragglar phase 1 and direct.
void append_ring_reduce_scatter(Phase& phase, std::span<const Rank> ranks,
                                std::uint32_t chunk_offset);
/// Appends a ring AllGather among `ranks`, the inverse of append_ring_reduce_scatter: starting
/// with ranks[i] holding chunk chunk_offset + i, ends with every rank holding all of them.
void append_ring_all_gather(Phase& phase, std::span<const Rank> ranks, std::uint32_t chunk_offset);

}  // namespace collsim
