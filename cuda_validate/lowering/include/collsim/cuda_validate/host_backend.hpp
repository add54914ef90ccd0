// CPU host-memory backend: executes lowered per-rank programs the way the GPUs do, so the
// lowering is tested without a GPU.
//
// Each rank runs its own program; nothing is global. A Group step posts its sends and receives;
// as on NCCL, the k-th send from a to b is matched with the k-th receive on b from a, and the data
// moves when both are posted (rendezvous). The sender's buffer is read at that moment, the
// receiver writes into its scratch slot (or in place). When every operation of a step has
// matched, the step's apply operations run and the rank moves on to its next step. A
// ReduceScatter step waits until every participant reached it, then sums their blocks. Ranks are
// polled in an order that can be reshuffled on every sweep, so ranks run ahead of each other as
// GPUs do; a correct lowering gives the same result for every order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

/// Executes `lowered` on `buffers` (n vectors of lowered.count floats), updated in place.
/// Throws ConfigError if the buffers have the wrong shape, ScheduleError if the programs
/// deadlock (the message lists every stuck rank and what it waits for) or a matched send and
/// receive disagree on the element count. Memory: the ranks' scratch, plus one block per
/// ReduceScatter participant.
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
