// CPU host-memory backend: executes the same ExecutionPlan (execution_plan.hpp) the GPU runner
// translates into CUDA/NCCL calls, with NCCL's and CUDA's documented semantics, so the lowering and
// the planning are tested without a GPU.
//
// The plan's groups are enqueued in order onto per-GPU streams: each GPU's calls of one group
// become one stream item (one NCCL kernel on a GPU), each copy/reduce after the group one more.
// A stream runs its items in order; nothing is global. When an NCCL item reaches the head of its
// stream it posts its calls: as on NCCL, the k-th send from a to b is matched with the k-th
// receive on b from a, and the data moves when both are posted (rendezvous); the sender's buffer
// is read at that moment, the receiver writes into its region (buffer or scratch). A
// ReduceScatter runs once every member of its communicator has posted it, as NCCL's in-place
// ReduceScatter (sums of the blocks). The item ends when all its calls did. Streams are polled in
// an order that can be reshuffled on every sweep, so GPUs run ahead of each other as they do on
// hardware; a correct plan gives the same result for every order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collsim/cuda_validate/execution_plan.hpp"
#include "collsim/cuda_validate/lowering.hpp"

namespace collsim::cuda_validate {

/// Options of one host execution.
struct HostRunOptions {
  /// 0 polls the ranks in rank order; any other value reshuffles the poll order on every sweep
  /// with this seed (own Fisher-Yates on std::mt19937_64, identical on every platform).
  std::uint64_t seed = 0;
};

/// Counters of one host execution.
struct HostRunStats {
  std::size_t sweeps = 0;          ///< passes over the ranks
  std::size_t matched_pairs = 0;   ///< send/recv pairs that moved data
  std::size_t collectives = 0;     ///< ReduceScatter steps executed
};

/// Executes `plan` on `buffers` (n vectors of plan.count floats), updated in place.
/// Throws ConfigError if the buffers have the wrong shape, ScheduleError if the plan deadlocks
/// (the message lists every stuck rank and what it waits for), a matched send and receive
/// disagree on the element count, a region lies outside its memory, or a ReduceScatter is not an
/// in-place one of equal blocks. Memory: the ranks' scratch, plus one input per ReduceScatter.
HostRunStats execute_plan_on_host(const ExecutionPlan& plan, std::vector<std::vector<float>>& buffers,
                                  const HostRunOptions& options = {});

/// build_execution_plan(lowered), then execute_plan_on_host. Throws as both.
HostRunStats execute_on_host(const LoweredSchedule& lowered, std::vector<std::vector<float>>& buffers,
                             const HostRunOptions& options = {});

/// n buffers of `count` floats, buffer r holding input_value(r, e).
std::vector<std::vector<float>> make_input_buffers(Rank n, std::size_t count);

/// Comparison of buffers with an expected AllReduce result.
struct ValidationResult {
  std::size_t mismatches = 0;   ///< (rank, element) pairs that differ
  std::string first_mismatch;   ///< description of the first one, empty if none
  bool ok() const { return mismatches == 0; }
};

/// Checks every buffer holds, at every element, the sum over all ranks of input_value.
/// Throws ConfigError if the buffers differ in size.
ValidationResult validate_allreduce(const std::vector<std::vector<float>>& buffers);

}  // namespace collsim::cuda_validate
