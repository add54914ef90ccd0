// The host-side enqueue plan of a lowered schedule: exactly which NCCL groups the host opens, in
// which order, which calls each group holds (on which GPU's stream, with which peer or
// communicator, into which buffer), and which copy/reduce operations follow each group on which
// stream. The GPU runner translates each entry into one CUDA/NCCL call and decides nothing; the
// CPU host backend executes the same plan with NCCL's documented semantics, so the planning
// (grouping, per-rank cursors, where the ReduceScatter goes) is tested without a GPU.
//
// Why one group per round over every GPU: one thread drives all GPUs, and NCCL requires the calls
// of several ranks issued from one thread to be grouped (each rank's call would otherwise block on
// its peers); NCCL pairs the k-th send from a to b with the k-th receive on b from a, per
// communicator, and the lowering emitted both ends in the same position. A round's ReduceScatter
// (a sub-communicator of its participants) gets its own group, before the round's point-to-point
// group. The host never waits between groups: stream order and NCCL's rendezvous carry the
// dependencies, so a GPU runs ahead until it needs a peer (schedule.hpp's per-rank semantics).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collsim/cuda_validate/lowering.hpp"

namespace collsim::cuda_validate {

/// A range of one GPU's memory: its data buffer or its scratch, in elements (float).
struct DeviceRegion {
  enum class Memory : std::uint8_t { Buffer, Scratch };
  Memory memory = Memory::Buffer;
  ElementRange range;
};

/// One NCCL call inside a group, issued on the stream of GPU `rank`.
struct NcclCall {
  enum class Kind : std::uint8_t { Send, Recv, ReduceScatter };
  Kind kind = Kind::Send;
  Rank rank = 0;                  ///< the GPU (and stream) that issues the call
  /// Send/Recv: the peer's rank in the world communicator (all GPUs, comm rank = GPU).
  Rank peer = 0;
  /// ReduceScatter: index into ExecutionPlan::collectives (its own communicator) and this GPU's
  /// rank in it.
  std::uint32_t collective = 0;
  std::uint32_t comm_rank = 0;
  /// Send: read. Recv: written. ReduceScatter: the output block (in place, inside `input`).
  DeviceRegion data;
  /// ReduceScatter only: the whole input (all blocks); NCCL's sendbuff.
  ElementRange input;
};

/// A copy (cudaMemcpyAsync) or a reduction kernel (dst += src) on GPU `rank`'s stream: scratch
/// slot -> buffer range.
struct StreamOp {
  Rank rank = 0;
  Op op = Op::Copy;
  std::size_t scratch_offset = 0;  ///< elements into the GPU's scratch
  ElementRange range;              ///< buffer elements written
};

/// One ncclGroupStart ... ncclGroupEnd, then the stream operations enqueued after it.
struct PlanGroup {
  std::uint32_t round = 0;           ///< global round of the schedule (for messages)
  std::vector<NcclCall> calls;       ///< never empty
  std::vector<StreamOp> after;       ///< enqueued once the group has ended, in this order
};

/// The whole enqueue plan of one run of a lowered schedule.
struct ExecutionPlan {
  std::string algorithm;
  Rank n = 0;
  std::size_t count = 0;                      ///< elements per GPU buffer
  std::vector<std::size_t> scratch_elements;  ///< per GPU
  std::vector<CollectiveSpec> collectives;    ///< sub-communicators, as in the LoweredSchedule
  std::vector<PlanGroup> groups;              ///< in host enqueue order
};

/// Builds the plan of `lowered`: for each global round, first one group per ReduceScatter that
/// starts in that round, then one group of every GPU's Send/Recv of that round followed by the
/// round's apply operations. Throws ScheduleError if the per-rank programs are not in round order
/// or a ReduceScatter step does not line up with its collective's participants.
ExecutionPlan build_execution_plan(const LoweredSchedule& lowered);

/// Human-readable listing, one line per call or stream operation (for tests and debugging).
std::string format_plan(const ExecutionPlan& plan);

}  // namespace collsim::cuda_validate
