// The time of a schedule on a contention-free topology as a linear function of the link
// parameters, which is what lets calibration fit alpha, beta and gamma "through the schedule".
//
// With every rank arriving at 0 and no two transfers sharing a link except a rank's own ports,
// each transfer costs alpha + bytes * beta (plus bytes * gamma at a reducing receiver), so the
// completion time is a max-plus expression of such terms. For fixed parameters the maximum picks
// one critical path, and along it the time is
//     latency * alpha + bytes * beta + reduce_bytes * gamma.
// schedule_cost_coefficients() walks the schedule with the per-rank rendezvous semantics of
// schedule.hpp and returns those three counts for the critical path at given parameters.
// Calibration re-evaluates them at the fitted parameters until they stop changing (they never
// change for the symmetric schedules: ring, recursive halving/doubling).
#pragma once

#include <optional>
#include <string_view>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/models/calibration.hpp"
#include "collsim/models/collective.hpp"
#include "collsim/models/link_model.hpp"
#include "collsim/models/topology.hpp"

namespace collsim {

/// The schedule that explains a measurement of `collective` on n ranks run with `algorithm`:
///  - all_reduce: the algorithm's whole AllReduce schedule (the size is the buffer per rank);
///  - reduce_scatter / all_gather: only the algorithm's phase of that name (ring: n-1 rounds of
///    one chunk of S/n, where S is nccl-tests' size column, the whole array);
///  - sendrecv: one round in which rank i sends its whole buffer to rank i+1 mod n (one chunk).
/// `straggler` is passed to straggler-aware generators (default n-1).
/// Throws ConfigError for an unknown algorithm or n < 2, ScheduleError when the algorithm does
/// not support n or has no phase named after the collective.
Schedule collective_schedule(Collective collective, Rank n, std::string_view algorithm,
                             std::optional<Rank> straggler = std::nullopt);
/// The part of the AllReduce schedule `full` that runs `collective` (as collective_schedule).
/// Throws ScheduleError when `full` has no phase named after it.
Schedule collective_part(Schedule full, Collective collective);

/// Critical-path counts of `schedule` for a buffer of `size_bytes` per rank (each chunk is
/// size_bytes / num_chunks), every rank arriving at 0. The critical path is the one that is
/// longest under `at`. Timing follows the replay engine on a non-blocking topology: a transfer
/// starts when both endpoints reached its round, the sender is done when the data has arrived,
/// a reducing receiver adds bytes * gamma. Approximation: when a rank sends (or receives) several
/// transfers in one round they are charged the rank's total bytes of that round, which is exact
/// for equal transfers that start together (fair sharing of the port) and otherwise an upper bound.
/// Throws ConfigError for a negative or non-finite size.
/// `execution` says how the schedule is launched: the counts include the launches on the critical
/// path (1 for Fused, one per round for P2pRounds) and its launch_s is the evaluation point.
CostCoefficients schedule_cost_coefficients(const Schedule& schedule, double size_bytes, const LinkModel& at,
                                            const ExecutionCosts& execution = {});

/// Per-link-class counts of `schedule` on `topology`, whose current link parameters (and
/// link.gamma_s_per_byte) are the evaluation point; one entry per topology.link_classes (one
/// class when that is empty). A transfer is charged as the replay engine times it: its route's
/// latency (the sum of its links' latencies) and its bytes at its route's bottleneck. So the
/// latency counts of class k add up the latency shares of the route's class-k links (1 for an
/// nvswitch or cluster up+down pair, 2 for a forwarded dgx1 pair, 0 for spine links), and the
/// bytes go wholly to the class of the bottleneck link, divided by that link's bandwidth
/// multiple. Port sharing is approximated as in the overload above, per link: a link carrying
/// several transfers of one round charges each of them the link's total bytes of the round
/// (links that can never bind count only the transfer's own bytes, as the engine skips them).
/// On a single-class topology built from `at` (make_nvswitch) the total() of the result is
/// exactly the overload above's. Throws ConfigError for a negative or non-finite size, a
/// topology with fewer GPUs than the schedule's ranks, or a schedule with a route that does not
/// exist (src == dst).
ClassCostCoefficients schedule_cost_coefficients(const Schedule& schedule, double size_bytes, const Topology& topology,
                                                 const ExecutionCosts& execution = {});

}  // namespace collsim
