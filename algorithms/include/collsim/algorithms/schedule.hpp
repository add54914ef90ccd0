// The schedule: the one data structure every algorithm produces and every engine executes.
//
// A schedule is a list of phases; a phase is a list of rounds; a round is a set of transfers
// src -> dst of a contiguous chunk range, with an operation at the receiver (copy or reduce).
// Every rank's buffer is cut into `num_chunks` equal chunks; byte sizes are attached only when a
// schedule is executed, so one schedule serves every buffer size.
//
// Execution semantics (shared by the verifier, the reference executor, every engine and the
// CUDA executor):
//  * Rounds are a label, never a global barrier. Each rank works through the rounds in order
//    (phases concatenated); a rank with no transfer in a round skips it.
//  * A transfer starts when both endpoints have reached its round (rendezvous, as NCCL
//    send/recv) and not before either endpoint's arrival time. A rank's next round starts when
//    all of its transfers of the current round are done.
//  * Within a round every send reads the sender's data as it was at the start of that round,
//    and received data is applied (copied over, or added to the receiver's data) when the round
//    ends. A rank may therefore send and receive the same chunk in one round (a swap), and two
//    transfers of one round must not write the same (rank, chunk).
//  * `ports` bounds how many transfers a rank may send, and separately receive, in one round
//    (1 = the one-port full-duplex model of the StragglAR paper).
//  * Start modes (chosen by the engine, not stored here): `eager` is the pure dataflow above;
//    `barrier` additionally holds every phase until all ranks taking part in it have arrived.
//
// Switch reductions (NVLS): a schedule may declare `num_switch_ranks` m > 0. Ranks n .. n+m-1
// are then in-network reduction units (switch rank n+k is the NVSwitch of node k; one node =
// one switch). They are ranks like any other for the rules above (rounds, rendezvous), with
// these differences, which every consumer implements:
//  * A switch rank has no buffer of its own: each of its chunks starts holding nothing (zero),
//    and the switch keeps nothing it has multicast: the first contribution to a chunk after the
//    switch sent it starts a new sum from zero (the NVSwitch stores no data, multimem reductions
//    and stores pass through it). So a node can reduce a chunk through its switch, multicast it,
//    and later pass the same chunk through again (nvls_tree: reduce-scatter, then all-gather).
//  * GPU -> switch transfers are `reduce`; several GPUs may reduce into the same (switch, chunk)
//    in one round, and the switch adds them in flight. This is the one exception to "no two
//    writes to one (rank, chunk) per round". Switch -> GPU transfers are `copy` (a multicast is
//    one copy per receiving GPU). Two switch ranks never exchange data.
//  * Switch ranks have no port limit, arrive at time 0, pay no launch overhead and no
//    reduction cost (the switch adds at line rate): they never delay anything themselves, but
//    since a switch enters its next round only when all of its transfers of the current one are
//    done, its multicast of a chunk waits for every GPU's contribution (a late GPU holds it).
//  * A GPU -> switch transfer uses only the GPU's up link to its switch, switch -> GPU only the
//    GPU's down link (Topology::route_into). Only topologies with `switch_reduction` run them.
//  * The AllReduce is complete when every GPU rank 0..n-1 holds every chunk's full sum; what
//    a switch holds at the end does not matter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace collsim {

using Rank = std::uint32_t;

/// What the receiver does with the chunk range it receives.
enum class Op : std::uint8_t { Copy, Reduce };

/// "copy" / "reduce".
const char* op_name(Op op);

/// One point-to-point message: `chunk_count` consecutive chunks starting at `chunk_begin`.
/// 16 bytes, so a 4096-rank ring (33.5 M transfers) needs about 540 MB.
struct Transfer {
  Rank src = 0;
  Rank dst = 0;
  std::uint32_t chunk_begin = 0;
  std::uint16_t chunk_count = 1;
  Op op = Op::Copy;
};
static_assert(sizeof(Transfer) <= 16, "Transfer must stay compact for 4096-rank schedules");

/// A named group of rounds (e.g. "reduce_scatter", "completion"). Transfers of all rounds are
/// stored contiguously, round after round; `round_begin_[r]` is the index of round r's first one.
class Phase {
 public:
  explicit Phase(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  std::size_t num_rounds() const { return round_begin_.size(); }
  std::size_t num_transfers() const { return transfers_.size(); }

  /// The transfers of round r (0 <= r < num_rounds()).
  std::span<const Transfer> round(std::size_t r) const;
  /// All transfers of the phase, in round order.
  std::span<const Transfer> transfers() const { return transfers_; }
  /// Index of the first transfer of round r; r == num_rounds() gives num_transfers().
  std::size_t round_begin(std::size_t r) const {
    return r < round_begin_.size() ? round_begin_[r] : transfers_.size();
  }

  /// Opens a new (possibly empty) round; later add() calls go into it.
  void begin_round() { round_begin_.push_back(static_cast<std::uint32_t>(transfers_.size())); }
  /// Appends a transfer to the last round. Throws ScheduleError if no round is open or the
  /// chunk count does not fit in 16 bits.
  void add(Rank src, Rank dst, std::uint32_t chunk_begin, std::uint32_t chunk_count, Op op);
  /// Drops trailing empty rounds (generators may open one round too many).
  void trim_empty_rounds();
  /// Renames every rank r to new_rank_of[r].
  void relabel(std::span<const Rank> new_rank_of);
  void reserve(std::size_t transfers) { transfers_.reserve(transfers); }

 private:
  std::string name_;
  std::vector<Transfer> transfers_;
  std::vector<std::uint32_t> round_begin_;
};

/// A complete AllReduce schedule for `n` ranks.
struct Schedule {
  std::string algorithm;       ///< registry name, e.g. "ring"
  Rank n = 0;                  ///< number of ranks
  std::uint32_t num_chunks = 1;///< equal chunks per rank buffer
  std::int64_t straggler = -1; ///< rank the schedule was built around, -1 if oblivious
  std::uint32_t ports = 1;     ///< max sends and max receives per GPU rank per round
  /// In-network reduction units: ranks n .. n+num_switch_ranks-1 (see the header comment).
  std::uint32_t num_switch_ranks = 0;
  /// Schedules relabelled at run time (AlgorithmInfo::relabel_at_run_time): how many ranks it
  /// expects late, labelled n-late_ranks..n-1 in arrival order; 0 for every other schedule.
  std::uint32_t late_ranks = 0;
  std::vector<Phase> phases;

  /// GPU ranks plus switch ranks: every valid rank id is below this.
  Rank num_ranks() const { return n + num_switch_ranks; }
  /// True for a switch rank (n <= r < num_ranks()).
  bool is_switch(Rank r) const { return r >= n && r < num_ranks(); }

  /// Appends a phase and returns it.
  Phase& add_phase(std::string name);
  std::size_t num_rounds() const;
  std::size_t num_transfers() const;
  /// Renames every GPU rank r to new_rank_of[r] (a permutation of 0..n-1); updates `straggler`.
  /// Switch ranks keep their ids. Throws ScheduleError if new_rank_of is not a permutation of
  /// size n.
  void relabel(std::span<const Rank> new_rank_of);
  /// Approximate heap bytes held (transfers and round tables).
  std::size_t memory_bytes() const;
};

/// The GPU ranks (< n) that send or receive at least once in `phase` (sorted, unique).
std::vector<Rank> participants(const Phase& phase, Rank n);

}  // namespace collsim
