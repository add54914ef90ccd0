// The per-rank execution rules of a schedule, free of any network model (private to sim/).
//
// Why a class of its own: the rules (each rank walks its own rounds; a transfer starts when both
// of its endpoints have reached its round; a new phase may hold a rank back until its barrier
// gate; a reduce is applied gamma * bytes after its data arrived) do not depend on how a network
// carries the data. An engine drives the walker with "this flow finished at t" and "the date you
// asked for has come", and supplies, through FlowNetwork, the two things the walker asks of it:
// carry this flow, and wake me at that date.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/sim/engine.hpp"

namespace collsim::detail {

/// Something the walker asked to be told about at a date.
struct Wakeup {
  enum class Kind : std::uint8_t {
    Enter,    ///< `id` is a rank: it reaches the round of its next transfer (arrival or gate)
    Reduced,  ///< `id` is a flow: the reduction of its data at the receiver is applied
  };
  Kind kind = Kind::Enter;
  std::uint32_t id = 0;
};

/// The network side of an engine, as the walker sees it.
class FlowNetwork {
 public:
  virtual ~FlowNetwork() = default;
  /// Starts carrying `bytes` (>= 0, may be fractional) from src to dst at `now_s`. The network
  /// reports the end with ScheduleWalker::flow_done(flow, end_s).
  virtual void start_flow(std::uint32_t flow, Rank src, Rank dst, double bytes, double now_s) = 0;
  /// Calls ScheduleWalker::wake(wakeup, date_s) at `date_s` (>= the current date).
  virtual void wake_at(double date_s, Wakeup wakeup) = 0;
};

class ScheduleWalker {
 public:
  /// `arrival_s` (per rank) and `gate_s` (per phase, the barrier-mode start gates, 0 in eager
  /// mode) come from run_checks.hpp; the spans must outlive the walker. Throws InternalError if
  /// the schedule has 2^32 transfers or more (transfer and flow ids are 32-bit).
  ScheduleWalker(const Schedule& schedule, double chunk_bytes, double gamma_s_per_byte,
                 std::span<const double> arrival_s, std::span<const double> gate_s, bool record_trace);

  std::uint32_t num_transfers() const { return num_transfers_; }

  /// Asks `network` for every rank's first round entry. Call once, before any other event.
  void start(FlowNetwork& network);
  /// Flow `flow` (an id given to FlowNetwork::start_flow) delivered its data at `now_s`.
  void flow_done(std::uint32_t flow, double now_s);
  /// A date asked for with FlowNetwork::wake_at has come.
  void wake(Wakeup wakeup, double now_s);

  bool all_done() const { return transfers_done_ == num_transfers_; }
  std::size_t transfers_done() const { return transfers_done_; }
  /// finish_s (per rank; a rank without transfers finishes at its arrival), transfers, and the
  /// trace in schedule order when record_trace. The summary fields are left to the caller.
  RunResult take_result();

 private:
  struct Flight {
    std::uint32_t transfer = 0;
    std::uint32_t round = 0;
    double start_s = 0;
  };

  void index_rounds();
  void build_rank_lists();
  const Transfer& transfer(std::uint32_t t, std::uint32_t round) const {
    const std::uint32_t p = round_phase_[round];
    return s_.phases[p].transfers()[t - phase_first_[p]];
  }
  std::uint32_t round_of(std::uint32_t t) const;
  void enter(Rank r, double now_s);
  void start_transfer(std::uint32_t t, std::uint32_t round, double now_s);
  void rank_done_with(Rank r, double now_s);
  void advance(Rank r, double now_s);
  void record(const Flight& flight, double end_s);
  void free_flight(std::uint32_t flow);

  const Schedule& s_;
  double chunk_bytes_;
  double gamma_s_per_byte_;
  std::span<const double> arrival_s_;
  std::span<const double> gate_s_;
  bool record_trace_;
  FlowNetwork* network_ = nullptr;

  // Transfers are numbered globally in schedule order; round g holds [round_first_[g], round_first_[g+1]).
  std::vector<std::uint32_t> round_first_;
  std::vector<std::uint32_t> round_phase_;
  std::vector<std::uint32_t> round_local_;
  std::vector<std::uint32_t> phase_first_;
  std::uint32_t num_transfers_ = 0;

  // Each rank's transfers in schedule order (so grouped by round), CSR layout.
  std::vector<std::size_t> rank_begin_;
  std::vector<std::uint32_t> rank_transfers_;

  // Per rank: the current round group [pos_, group_end_), the round it is in (kNoRound while it
  // waits for a wake-up or is finished), and how many transfers of the group are not done.
  std::vector<std::size_t> pos_;
  std::vector<std::size_t> group_end_;
  std::vector<std::uint32_t> in_round_;
  std::vector<std::uint32_t> remaining_;
  std::vector<double> finish_s_;

  // Flows in flight (or waiting for their reduction), by flow id; ids are reused.
  std::vector<Flight> flights_;
  std::vector<std::uint32_t> free_flights_;

  std::size_t transfers_done_ = 0;
  std::vector<TransferRecord> trace_;
};

}  // namespace collsim::detail
