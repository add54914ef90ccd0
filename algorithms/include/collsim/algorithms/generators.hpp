// Schedule generators, one source file each. Each is pure: (options) -> Schedule, built with the
// straggler (if the algorithm cares) at rank n-1. Call them through generate_schedule(), which
// checks support and relabels; the support functions return "" or the reason n is unsupported.
#pragma once

#include <string>

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

/// In-switch reduction and multicast over one switch rank, pipelined over options.pipeline_chunks.
Schedule generate_nvls(const AlgorithmOptions& options);
/// Empty unless the context says the switch cannot reduce or the GPUs span several nodes.
std::string nvls_unsupported(Rank n, const NConstraintContext& context);

Schedule generate_stragglar(const AlgorithmOptions& options);
std::string stragglar_unsupported(Rank n);

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
