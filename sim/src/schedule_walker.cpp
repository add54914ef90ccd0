#include "schedule_walker.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "collsim/models/error.hpp"

namespace collsim::detail {
namespace {

constexpr std::uint32_t kNoRound = std::numeric_limits<std::uint32_t>::max();

}  // namespace

ScheduleWalker::ScheduleWalker(const Schedule& schedule, double chunk_bytes, double gamma_s_per_byte,
                               std::span<const double> arrival_s, std::span<const double> gate_s, bool record_trace)
    : s_(schedule),
      chunk_bytes_(chunk_bytes),
      gamma_s_per_byte_(gamma_s_per_byte),
      arrival_s_(arrival_s),
      gate_s_(gate_s),
      record_trace_(record_trace) {
  index_rounds();
  build_rank_lists();
  finish_s_.assign(arrival_s_.begin(), arrival_s_.end());
  pos_.assign(s_.n, 0);
  group_end_.assign(s_.n, 0);
  in_round_.assign(s_.n, kNoRound);
  remaining_.assign(s_.n, 0);
  // Records are stored at their transfer's index, so the trace comes out in schedule order.
  if (record_trace_) trace_.resize(num_transfers_);
}

void ScheduleWalker::index_rounds() {
  std::size_t total = 0;
  for (const Phase& phase : s_.phases) {
    phase_first_.push_back(static_cast<std::uint32_t>(std::min<std::size_t>(total, kNoRound)));
    for (std::size_t r = 0; r < phase.num_rounds(); ++r) {
      round_first_.push_back(static_cast<std::uint32_t>(std::min<std::size_t>(total + phase.round_begin(r), kNoRound)));
      round_phase_.push_back(static_cast<std::uint32_t>(&phase - s_.phases.data()));
      round_local_.push_back(static_cast<std::uint32_t>(r));
    }
    total += phase.num_transfers();
  }
  if (total >= kNoRound) {
    throw InternalError(fmt::format("schedules of 2^32 transfers or more are not supported; the {} schedule has {}",
                                    s_.algorithm, total));
  }
  num_transfers_ = static_cast<std::uint32_t>(total);
  round_first_.push_back(num_transfers_);
}

void ScheduleWalker::build_rank_lists() {
  rank_begin_.assign(s_.n + 1, 0);
  for (const Phase& phase : s_.phases) {
    for (const Transfer& t : phase.transfers()) {
      ++rank_begin_[t.src + 1];
      ++rank_begin_[t.dst + 1];
    }
  }
  for (Rank r = 0; r < s_.n; ++r) rank_begin_[r + 1] += rank_begin_[r];
  rank_transfers_.resize(rank_begin_[s_.n]);
  std::vector<std::size_t> fill(rank_begin_.begin(), rank_begin_.end() - 1);
  std::uint32_t index = 0;
  for (const Phase& phase : s_.phases) {
    for (const Transfer& t : phase.transfers()) {
      rank_transfers_[fill[t.src]++] = index;
      rank_transfers_[fill[t.dst]++] = index;
      ++index;
    }
  }
}

std::uint32_t ScheduleWalker::round_of(std::uint32_t t) const {
  return static_cast<std::uint32_t>(std::upper_bound(round_first_.begin(), round_first_.end(), t) - round_first_.begin() - 1);
}

void ScheduleWalker::start(FlowNetwork& network) {
  network_ = &network;
  for (Rank r = 0; r < s_.n; ++r) {
    pos_[r] = rank_begin_[r];
    if (pos_[r] == rank_begin_[r + 1]) continue;
    const std::uint32_t round = round_of(rank_transfers_[pos_[r]]);
    network_->wake_at(std::max(arrival_s_[r], gate_s_[round_phase_[round]]), Wakeup{Wakeup::Kind::Enter, r});
  }
}

void ScheduleWalker::wake(Wakeup wakeup, double now_s) {
  if (wakeup.kind == Wakeup::Kind::Enter) {
    enter(wakeup.id, now_s);
    return;
  }
  const Flight flight = flights_[wakeup.id];
  free_flight(wakeup.id);
  record(flight, now_s);
  rank_done_with(transfer(flight.transfer, flight.round).dst, now_s);
}

// Rank r reaches the round of its next transfer: every transfer of that round whose other
// endpoint is already there starts now; the others start when that endpoint arrives.
void ScheduleWalker::enter(Rank r, double now_s) {
  const std::size_t begin = pos_[r];
  const std::uint32_t round = round_of(rank_transfers_[begin]);
  const std::uint32_t round_end = round_first_[round + 1];
  std::size_t end = begin;
  while (end < rank_begin_[r + 1] && rank_transfers_[end] < round_end) ++end;
  group_end_[r] = end;
  remaining_[r] = static_cast<std::uint32_t>(end - begin);
  in_round_[r] = round;
  for (std::size_t i = begin; i < end; ++i) {
    const std::uint32_t t = rank_transfers_[i];
    const Transfer& tr = transfer(t, round);
    const Rank other = tr.src == r ? tr.dst : tr.src;
    if (in_round_[other] == round) start_transfer(t, round, now_s);
  }
}

void ScheduleWalker::start_transfer(std::uint32_t t, std::uint32_t round, double now_s) {
  std::uint32_t flow;
  if (free_flights_.empty()) {
    flow = static_cast<std::uint32_t>(flights_.size());
    flights_.emplace_back();
  } else {
    flow = free_flights_.back();
    free_flights_.pop_back();
  }
  flights_[flow] = Flight{t, round, now_s};
  const Transfer& tr = transfer(t, round);
  network_->start_flow(flow, tr.src, tr.dst, tr.chunk_count * chunk_bytes_, now_s);
}

// The data of the flow has arrived: the sender is done; the receiver is done now, or after the
// reduction cost for a reduce.
void ScheduleWalker::flow_done(std::uint32_t flow, double now_s) {
  const Flight flight = flights_[flow];
  const Transfer& tr = transfer(flight.transfer, flight.round);
  const double bytes = tr.chunk_count * chunk_bytes_;
  rank_done_with(tr.src, now_s);
  if (tr.op == Op::Reduce && bytes > 0 && gamma_s_per_byte_ > 0) {
    // The flight stays allocated until the reduction is applied: the wake-up names it.
    network_->wake_at(now_s + bytes * gamma_s_per_byte_, Wakeup{Wakeup::Kind::Reduced, flow});
    return;
  }
  free_flight(flow);
  record(flight, now_s);
  rank_done_with(tr.dst, now_s);
}

void ScheduleWalker::free_flight(std::uint32_t flow) { free_flights_.push_back(flow); }

void ScheduleWalker::record(const Flight& flight, double end_s) {
  if (record_trace_) {
    trace_[flight.transfer] = TransferRecord{round_phase_[flight.round], round_local_[flight.round],
                                             transfer(flight.transfer, flight.round), flight.start_s, end_s};
  }
  ++transfers_done_;
}

void ScheduleWalker::rank_done_with(Rank r, double now_s) {
  if (--remaining_[r] == 0) advance(r, now_s);
}

// All transfers of r's current round are done at `now_s`: finish, or move on to the next round,
// held back by the barrier gate of a new phase.
void ScheduleWalker::advance(Rank r, double now_s) {
  in_round_[r] = kNoRound;
  pos_[r] = group_end_[r];
  if (pos_[r] == rank_begin_[r + 1]) {
    finish_s_[r] = now_s;
    return;
  }
  const std::uint32_t round = round_of(rank_transfers_[pos_[r]]);
  const double gate_s = gate_s_[round_phase_[round]];
  if (gate_s > now_s) {
    network_->wake_at(gate_s, Wakeup{Wakeup::Kind::Enter, r});
  } else {
    enter(r, now_s);
  }
}

RunResult ScheduleWalker::take_result() {
  RunResult result;
  result.finish_s = std::move(finish_s_);
  result.transfers = num_transfers_;
  result.trace = std::move(trace_);
  return result;
}

}  // namespace collsim::detail
