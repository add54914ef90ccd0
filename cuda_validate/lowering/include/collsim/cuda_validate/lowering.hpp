// Lowering of a Schedule to per-GPU operation lists (one program per rank). execution_plan.hpp
// turns the programs into the host's enqueue plan, which the CUDA/NCCL executor (collsim-cuda)
// translates call by call and the CPU host backend (host_backend.hpp) executes.
//
// A rank's program is a list of steps in round order (phases concatenated). A step is either
//  * a Group: one ncclGroupStart/End worth of ncclSend/ncclRecv calls (the rank's transfers of
//    one round), followed by apply operations launched on the same stream after the group, or
//  * a ReduceScatter: one ncclReduceScatter on a communicator of a subset of the ranks, replacing
//    a whole phase of the schedule (StragglAR's phase 1 with --phase1 nccl).
//
// Why receive into scratch and apply after the group: schedule.hpp says every send of a round
// reads the sender's data as of the round start and received data is applied at the round end
// (a rank may send chunk c and receive into chunk c in the same round, e.g. a swap). A receive
// that reduces, or that would overwrite a range a send of the same step still reads, therefore
// lands in a scratch slot and is copied or added into the buffer by an apply operation that the
// stream orders after the whole group. A copy receive whose range no send of the step reads goes
// straight into the buffer (copy_in_place) and saves a device-to-device copy.
//
// Scratch: slots of one step are laid out back to back, each aligned to kScratchAlignElements;
// the scratch of a rank is the largest step's total. Steps reuse the same scratch because
// the stream runs a step's apply operations before the next step's receives.
//
// NCCL matches the k-th ncclSend from a to b with the k-th ncclRecv on b from a. The lowering
// emits both ends of every transfer in the same step position (same round, transfer order), so
// the pairing is the schedule's. Element offsets follow chunk_split.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/cuda_validate/chunk_split.hpp"

namespace collsim::cuda_validate {

/// Scratch slots start at multiples of this many elements (256 bytes of float), so the reduction
/// kernel can use vector loads on slots whenever the buffer side is aligned too.
inline constexpr std::size_t kScratchAlignElements = 64;

/// A slot offset that means "the receive lands in the buffer, not in scratch".
inline constexpr std::size_t kNoScratch = static_cast<std::size_t>(-1);

/// One ncclSend or ncclRecv. Offsets and counts are in elements (float).
struct PeerOp {
  enum class Kind : std::uint8_t { Send, Recv };
  Kind kind = Kind::Send;
  Rank peer = 0;
  ElementRange range;                    ///< send: buffer range read; recv: buffer range written (eventually)
  std::size_t scratch_offset = kNoScratch;  ///< recv only: slot offset, or kNoScratch if received in place
};

/// Applies one scratch slot to the buffer after the group: copy (overwrite) or reduce (add).
struct ApplyOp {
  Op op = Op::Copy;
  std::size_t scratch_offset = 0;  ///< elements into the rank's scratch
  ElementRange range;              ///< buffer elements written
};

/// One step of a rank's program (see the file comment).
struct Step {
  enum class Kind : std::uint8_t { Group, ReduceScatter };
  Kind kind = Kind::Group;
  std::uint32_t round = 0;         ///< global round index (phases concatenated)
  std::uint32_t phase = 0;         ///< index into Schedule::phases
  std::vector<PeerOp> peer_ops;    ///< Group: in schedule order
  std::vector<ApplyOp> apply_ops;  ///< Group: in schedule order; they write disjoint ranges
  std::uint32_t collective = 0;    ///< ReduceScatter: index into LoweredSchedule::collectives
};

/// A phase replaced by one in-place ncclReduceScatter among `ranks`.
/// Communicator rank i is ranks[i]; it ends with chunk (chunk_offset + i), block_elements
/// elements starting at element input.offset + i * block_elements, summed over all of `ranks`.
/// Every other element of the participants' buffers is left as it was (unlike the schedule's own
/// ring, which leaves partial sums there); the lowering checks the rest of the schedule never
/// reads those elements before overwriting them.
struct CollectiveSpec {
  std::uint32_t phase = 0;
  std::vector<Rank> ranks;          ///< participants in communicator order
  std::uint32_t chunk_offset = 0;   ///< chunk owned by ranks[0]
  ElementRange input;               ///< the ranks.size() blocks, contiguous
  std::size_t block_elements = 0;   ///< elements per block (all equal)
};

/// The program of one rank.
struct RankProgram {
  std::vector<Step> steps;           ///< in round order, no empty step
  std::size_t scratch_elements = 0;  ///< scratch the rank needs (elements)
};

/// A schedule lowered for a buffer of `count` elements per rank.
struct LoweredSchedule {
  std::string algorithm;
  Rank n = 0;
  std::size_t count = 0;
  std::uint32_t num_chunks = 1;
  std::uint32_t num_rounds = 0;      ///< global rounds, including those of replaced phases
  std::vector<RankProgram> programs; ///< programs[r] for r in 0..n-1
  std::vector<CollectiveSpec> collectives;

  /// Total ncclSend calls over all ranks (= ncclRecv calls).
  std::size_t num_sends() const;
  /// Largest scratch over the ranks (elements).
  std::size_t max_scratch_elements() const;
};

/// How to lower.
struct LoweringOptions {
  std::size_t count = 0;             ///< elements (float) per rank buffer
  bool copy_in_place = true;         ///< receive copies straight into the buffer when safe
  /// Name of a phase to run as one ncclReduceScatter (StragglAR: "reduce_scatter"); empty = none.
  /// The phase must leave each of its k participants with a distinct one of k consecutive chunks
  /// reduced over exactly the participants, and those chunks must have equal sizes. A phase
  /// without transfers stays as it is (nothing to replace).
  std::string nccl_reduce_scatter_phase;
};

/// The phase that `--phase1 nccl` runs as one ncclReduceScatter (StragglAR's phase 1).
inline constexpr std::string_view kReadyReduceScatterPhase = "reduce_scatter";

/// Whether `schedule` was built around a straggler (schedule.straggler >= 0) and has a phase
/// named kReadyReduceScatterPhase: the ReduceScatter among the ready ranks that collsim-cuda can
/// run as one ncclReduceScatter. Why from the schedule and not the algorithm's name: the facts
/// about an algorithm live in its registry row or in what it generates; ring also has a
/// "reduce_scatter" phase, but over every rank, and it must keep its own rounds.
bool has_ready_reduce_scatter(const Schedule& schedule);

/// Lowers `schedule`. Throws ScheduleError if the schedule is malformed for execution (rank or
/// chunk out of range, a rank sending to itself, two transfers of one round writing overlapping
/// elements of one rank), and ConfigError if the requested phase does not exist, is not a
/// reduce-scatter as described above, has unequal blocks for `count` (round count to a multiple
/// of 4 * num_chunks), or cannot replace the phase because later phases read its partial sums.
/// The replacement check tracks contributions in 64-bit masks, so it needs n <= 64.
LoweredSchedule lower_schedule(const Schedule& schedule, const LoweringOptions& options);

/// Human-readable listing of one rank's program (for --print-program and tests), one line per
/// operation, e.g. "round 0: send to 1 [0, 4)" / "round 0: recv from 1 [4, 8) -> scratch 0, then
/// reduce". Throws ConfigError if rank >= n.
std::string format_program(const LoweredSchedule& lowered, Rank rank);

}  // namespace collsim::cuda_validate
