// Closed-form alpha-beta(-gamma) completion times of every AllReduce algorithm, with one
// straggler that arrives delay_s after the other ranks (which all arrive at t = 0).
//
// Each formula is the exact per-rank dataflow time (schedule.hpp semantics) of the schedule the
// corresponding generator in algorithms/ builds, on an uncontended one-port network:
//  * a transfer of m bytes starts when both endpoints have finished their previous round (and
//    arrived) and occupies both of them for alpha + m*beta, plus m*gamma when the receiver
//    reduces (the sender's round also ends only then: rendezvous, as NCCL send/recv);
//  * a chunk is size_bytes / num_chunks;
//  * start mode `barrier` additionally holds each phase until all its participants arrived.
// The straggler is rank n-1 of the generated schedule (straggler-aware generators are relabelled
// for other ranks, which changes nothing here; for oblivious algorithms a late rank other than
// n-1 may give a different eager time). The replay and SimGrid engines must agree with these
// numbers to 1e-9 on a contention-free topology (design.md section 3).
#pragma once

#include <cstdint>

#include "collsim/models/link_model.hpp"

namespace collsim {

struct ClosedFormInput {
  std::uint32_t n = 0;              ///< ranks, >= 2
  double size_bytes = 0;            ///< buffer per rank, >= 0
  LinkModel link;                   ///< alpha, beta, gamma
  double delay_s = 0;               ///< the straggler arrives delay_s after everyone else, >= 0
  StartMode start = StartMode::Barrier;
  /// Pipelined algorithms (the trees): the schedule's pipeline depth, i.e. its num_chunks, >= 1.
  /// Ignored by the others. The default depth is a fact of the algorithm table
  /// (AlgorithmInfo::default_pipeline_chunks), not of these formulas.
  std::uint32_t pipeline_chunks = 0;
  /// Total rounds (all phases) of the schedule in use; 0 = not known. Only a formula whose round
  /// count depends on the generator's construction reads it: stragglar takes its completion
  /// rounds R = schedule_rounds - (n - 2) from it, and without it knows R only for n a power of
  /// two (n - 2 + log2 n).
  std::uint32_t schedule_rounds = 0;
  /// Algorithms relabelled at run time (stragglar_online): seconds the present ranks take to
  /// agree on who is late, charged before the first phase and again when the late rank arrives.
  /// Ignored by the others. >= 0.
  double agreement_s = 0;
  /// Topology::switch_reduction_efficiency: nvls moves its bytes at this fraction of the link
  /// bandwidth. Ignored by the others. In (0, 1].
  double switch_efficiency = 1.0;
  /// Hierarchical algorithms on a cluster: GPUs per node G (0 = no node structure, as 1: every
  /// rank a node of its own) and the intra-node (NVLink) message cost; `link` is then the
  /// inter-node NIC path and its gamma applies to both. Ignored by the flat formulas.
  std::uint32_t gpus_per_node = 0;
  LinkModel node_link;
};

struct ClosedFormResult {
  double time_s = 0;                    ///< first arrival (t = 0) to last finish
  double time_after_last_arrival_s = 0; ///< time_s - delay_s (> 0: the straggler always has work
                                        ///< left when it arrives)
  double collective_s = 0;              ///< the same algorithm with no delay
  std::uint32_t rounds = 0;             ///< rounds of the schedule (all phases)
};

/// The closed form of one algorithm. The algorithm table (algorithms/registry.hpp,
/// AlgorithmInfo::closed_form) points at one of the functions below; nothing here knows
/// algorithm names, so that a new algorithm is added in one place.
/// Every formula holds in both start modes, for every n >= 2, and does O(n) work at most (the
/// tree formulas walk the tree shape once).
/// Every formula throws ConfigError naming the offending value for n < 2, a negative or
/// non-finite size, delay, alpha or gamma, or a non-positive bandwidth, and (pipelined ones) for
/// pipeline_chunks = 0. Exactness: the formulas of ring, recursive_halving_doubling,
/// recursive_doubling, direct, binomial_tree and straggler_tree follow from their schedules'
/// structure; stragglar's assumes (as in the published construction) that the straggler takes
/// part in every completion round and that its n-1 exchanges are the only reductions;
/// double_binary_tree's critical chain wanders between the two trees and its round counts are
/// stated, not proved, for its heap structure and checked exhaustively against the dataflow
/// (see closed_form.cpp).
using ClosedFormFn = ClosedFormResult (*)(const ClosedFormInput& input);

ClosedFormResult ring_closed_form(const ClosedFormInput& input);
ClosedFormResult recursive_halving_doubling_closed_form(const ClosedFormInput& input);
/// MPICH's fold (recursive_halving_doubling_fold): extra ranks fold their whole buffer in.
ClosedFormResult recursive_halving_doubling_fold_closed_form(const ClosedFormInput& input);
ClosedFormResult recursive_doubling_closed_form(const ClosedFormInput& input);
ClosedFormResult direct_closed_form(const ClosedFormInput& input);
ClosedFormResult binomial_tree_closed_form(const ClosedFormInput& input);
ClosedFormResult straggler_tree_closed_form(const ClosedFormInput& input);
/// Also throws ScheduleError for an odd pipeline_chunks or fewer than 4 (the formula needs two
/// chunks per tree).
ClosedFormResult double_binary_tree_closed_form(const ClosedFormInput& input);
/// Also throws ScheduleError when schedule_rounds is 0 at an n that is not a power of two, or
/// gives fewer than n - 1 completion rounds.
ClosedFormResult stragglar_closed_form(const ClosedFormInput& input);
/// NVLS (in-switch reduction and multicast, pipelined over input.pipeline_chunks C): C + 1
/// rounds of one GPU -> switch or switch -> GPU message, each alpha/2 + (s/C) beta (one NVLink
/// direction), after the last arrival in both start modes; the switch's reduction is free.
ClosedFormResult nvls_closed_form(const ClosedFormInput& input);
/// stragglar_online with one late rank: stragglar's schedule with every phase gated
/// agreement_s after the arrival that decides it, which delays everything by agreement_s:
/// agreement_s + stragglar's time. Throws as stragglar_closed_form, and ConfigError for a
/// negative or non-finite agreement_s.
ClosedFormResult stragglar_online_closed_form(const ClosedFormInput& input);

/// hierarchical (hierarchical.cpp) on a contention-free cluster (1:1, a NIC per GPU), n = N x G:
/// intra-node ring ReduceScatter and AllGather of the G slices over node_link, around the flat
/// ring (hierarchical) or recursive halving/doubling (hierarchical_rhd) closed form over the N
/// nodes with S / G bytes on `link`. Every round of the two intra-node rings takes the same time
/// on every GPU, so a late GPU delays its whole node's ReduceScatter by exactly the delay, and
/// the flat formula sees node N-1 late by it in both start modes:
///   time = (G-1)(alpha_v + (S/G)(beta_v + gamma)) + flat(N, S/G, delay) + (G-1)(alpha_v + (S/G) beta_v),
/// with one node (N = 1) the delay plus the two rings. Throws as the flat formulas do, and
/// ConfigError when G does not divide n or node_link is invalid (G > 1); ScheduleError when
/// schedule_rounds is given and differs from the schedule's (a schedule built for another G).
ClosedFormResult hierarchical_closed_form(const ClosedFormInput& input);
ClosedFormResult hierarchical_rhd_closed_form(const ClosedFormInput& input);

/// Rabenseifner & Traeff's published cost of recursive halving/doubling with 3-2 elimination for
/// n that is not a power of two (Rabenseifner & Traeff, EuroPVM/MPI 2004; formula quoted in the
/// StragglAR paper), no delay, no reduction cost:
///   2 ceil(log2 n) alpha + 2 s beta (1.5 - 1 / 2^floor(log2 n)).
/// collsim's recursive_halving_doubling schedule takes exactly this time with gamma = 0 and no
/// delay at odd n other than 3 and 9, and less at every other n (see
/// docs/recursive_halving_doubling.md); closed_form_time() gives its time with gamma and delays.
/// recursive_halving_doubling_fold (MPICH's fold) takes 2 s beta (2 - 1/2^floor(log2 n)) instead.
/// Throws ConfigError as closed_form_time() does.
double rhd_three_two_elimination_s(std::uint32_t n, double size_bytes, const LinkModel& link);

}  // namespace collsim
