// How the schedule is driven, and why this way (SimGrid 3.32 specifics measured on a 1024-rank
// ring, 2.1 M transfers):
//  * The control logic runs in SimGrid's maestro: kernel timers start ranks at their arrival (or
//    barrier gate) and apply reduction costs, and completions arrive through
//    Link::on_communication_state_change. No per-rank actors exchange mailbox messages.
//  * Flows are two-host parallel executions (s4u::Exec with a 2x2 byte matrix), which the
//    default host model turns into exactly one CM02 network flow from the first host to the
//    second, with a byte count that may be fractional. Not Comm::sendto: every host-to-host comm
//    is a kernel-detached activity that SimGrid appends to maestro's activity list and removes
//    with std::list::remove on completion, a scan over every flow in flight (a 1024-rank ring
//    then spends most of its time in that scan, and it grows as n^3).
//  * An Exec sits in the activity list of the actor that starts it, so the flows are started by
//    a few issuer actors (at most kMaxIssuers), each owning a share of the senders: their lists
//    stay short. The maestro logic queues a ready transfer and wakes its issuer through a
//    semaphore; the issuer starts everything queued in one simcall.
//  * Flows in flight are found again by their activity's address in an open-addressing index
//    (pointer_index.hpp), not a node-based hash map.
//  * The completion signal fires inside the network model's update loop, where starting flows
//    would modify the solver it iterates over: completions are queued and handled by a kernel
//    timer at the same simulated date.
#include "simgrid_simulation.hpp"

#include <fmt/format.h>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/resource/Action.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Semaphore.hpp>
#include <simgrid/simix.hpp>

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>
#include <utility>

#include "collsim/models/error.hpp"
#include "pointer_index.hpp"
#include "simgrid_platform.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define COLLSIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COLLSIM_ASAN 1
#endif
#endif
#ifndef COLLSIM_ASAN
#define COLLSIM_ASAN 0
#endif

namespace sg4 = simgrid::s4u;
namespace sgk = simgrid::kernel;

namespace collsim::detail {
namespace {

constexpr std::uint32_t kNoRound = std::numeric_limits<std::uint32_t>::max();
// Issuer actors: more means shorter activity lists, fewer means fewer context switches.
constexpr std::uint32_t kMaxIssuers = 64;

// Exact alpha-beta configuration. CM02 is the plain max-min flow model; its defaults are already
// factor 1 and weight-S 0, but they are pinned so a changed default cannot slip in.
// Full, not Lazy: SimGrid 3.32's lazy update gives wrong, order-dependent max-min shares when
// several flows contend for one link (a flow measured 12% early). Full re-solves the shares at
// every event; on a ring (one flow per link) it costs no measurable time.
// Precisions, in SimGrid's time unit (microseconds, kSimGridUnitsPerSecond): event dates to
// 1e-9 us = 1e-15 s (the default 1e-9 would merge events a nanosecond apart and finish flows
// early); the solver to 1e-9, which is both the absolute tolerance on a link's usage (sum of
// 1/latency, ~1 per flow in microseconds: rounding residues of thousands of flows stay below it)
// and the relative tolerance on a link's remaining bandwidth, so rates stay exact to ~1e-9.
// collsim compares engines to 1e-9 relative on microsecond-scale times.
// Only argv can set these: the network keys do not exist before the Engine is constructed, and
// the model cannot be changed after.
constexpr const char* kSimGridArgs[] = {
    "collsim",
    "--log=root.thresh:critical",
    "--cfg=network/model:CM02",
    "--cfg=network/optim:Full",
    "--cfg=network/crosstraffic:0",
    "--cfg=network/TCP-gamma:0",
    "--cfg=network/latency-factor:1",
    "--cfg=network/bandwidth-factor:1",
    "--cfg=network/weight-S:0",
    "--cfg=surf/precision:1e-9",
    "--cfg=maxmin/precision:1e-9",
#if COLLSIM_ASAN
    // SimGrid's default contexts switch stacks behind AddressSanitizer's back; threads do not.
    "--cfg=contexts/factory:thread",
#endif
};

// Dates cross the SimGrid boundary in its time unit; collsim keeps seconds.
double now_s() { return sg4::Engine::get_clock() / kSimGridUnitsPerSecond; }
template <class Callback>
void at_s(double date_s, Callback callback) {
  sgk::timer::Timer::set(date_s * kSimGridUnitsPerSecond, std::move(callback));
}

class Simulation {
 public:
  Simulation(const Schedule& schedule, const RunConfig& config, std::span<const double> arrival_s,
             std::span<const double> gate_s)
      : s_(schedule),
        topology_(config.topology),
        arrival_s_(arrival_s),
        gate_s_(gate_s),
        chunk_bytes_(config.size_bytes / schedule.num_chunks),
        gamma_s_per_byte_(config.topology.link.gamma_s_per_byte),
        record_trace_(config.record_trace) {
    index_rounds();
    build_rank_lists();
  }

  RunResult run();

 private:
  struct Flight {
    sg4::ExecPtr exec;
    std::uint32_t transfer = 0;
    std::uint32_t round = 0;
    double start_s = 0;
  };
  struct Ready {
    std::uint32_t transfer;
    std::uint32_t round;
  };

  void index_rounds();
  void build_rank_lists();
  std::vector<GpuPair> used_pairs() const;
  const Transfer& transfer(std::uint32_t t, std::uint32_t round) const {
    const std::uint32_t p = round_phase_[round];
    return s_.phases[p].transfers()[t - phase_first_[p]];
  }
  std::uint32_t round_of(std::uint32_t t) const {
    return static_cast<std::uint32_t>(std::upper_bound(round_first_.begin(), round_first_.end(), t) - round_first_.begin() - 1);
  }

  void create_issuers();
  void issuer_loop(std::uint32_t issuer);
  void issue(std::span<const Ready> batch, std::vector<sg4::ExecPtr>& execs);
  void start_ranks();
  void enter(Rank r);
  void advance(Rank r, double now);
  void start_transfer(std::uint32_t t, std::uint32_t round);
  void on_network_action(sgk::resource::Action& action);
  void flush_arrivals();
  void data_arrived(std::uint32_t t, std::uint32_t round, double start_s, double now);
  void rank_done_with(Rank r, double now);
  void record(std::uint32_t t, std::uint32_t round, double start_s, double end_s);

  const Schedule& s_;
  const Topology& topology_;
  std::span<const double> arrival_s_;
  std::span<const double> gate_s_;
  double chunk_bytes_;
  double gamma_s_per_byte_;
  bool record_trace_;

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
  // waits for a timer or is finished), and how many transfers of the group are not done.
  std::vector<std::size_t> pos_;
  std::vector<std::size_t> group_end_;
  std::vector<std::uint32_t> in_round_;
  std::vector<std::uint32_t> remaining_;
  std::vector<double> finish_s_;

  std::vector<sg4::Host*> hosts_;
  std::vector<sg4::SemaphorePtr> issuer_wake_;
  std::vector<std::vector<Ready>> issuer_queue_;
  bool quit_ = false;

  std::vector<Flight> flights_;
  std::vector<std::uint32_t> free_flights_;
  PointerIndex flight_of_;  // SimGrid activity -> slot in flights_
  std::vector<const void*> arrived_;
  bool flush_armed_ = false;
  bool failed_ = false;
  // Flows whose completion was handled. SimGrid still posts the activity after the state change
  // (later in the same scheduling round), so references are held for two more flushes.
  std::vector<sg4::ExecPtr> retired_[2];
  std::size_t transfers_done_ = 0;
  std::vector<TransferRecord> trace_;
};

void Simulation::index_rounds() {
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
    throw InternalError(fmt::format("the simgrid engine handles fewer than 2^32 transfers; the {} schedule has {}",
                                    s_.algorithm, total));
  }
  num_transfers_ = static_cast<std::uint32_t>(total);
  round_first_.push_back(num_transfers_);
}

void Simulation::build_rank_lists() {
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

// Distinct (src, dst) pairs: a ring at n = 4096 has 33.5 M transfers but only 4096 pairs. A bit
// matrix while it is small, a hash set beyond.
std::vector<GpuPair> Simulation::used_pairs() const {
  std::vector<GpuPair> pairs;
  const std::uint64_t n = s_.n;
  if (n <= 16384) {
    std::vector<bool> seen(n * n, false);
    for (const Phase& phase : s_.phases) {
      for (const Transfer& t : phase.transfers()) {
        const std::uint64_t key = t.src * n + t.dst;
        if (seen[key]) continue;
        seen[key] = true;
        pairs.emplace_back(t.src, t.dst);
      }
    }
  } else {
    std::unordered_map<std::uint64_t, bool> seen;
    for (const Phase& phase : s_.phases) {
      for (const Transfer& t : phase.transfers()) {
        if (seen.emplace(t.src * n + t.dst, true).second) pairs.emplace_back(t.src, t.dst);
      }
    }
  }
  return pairs;
}

RunResult Simulation::run() {
  RunResult result;
  result.finish_s.assign(arrival_s_.begin(), arrival_s_.end());
  if (num_transfers_ == 0) return result;

  std::vector<char*> argv;
  for (const char* arg : kSimGridArgs) argv.push_back(const_cast<char*>(arg));
  argv.push_back(nullptr);
  int argc = static_cast<int>(argv.size()) - 1;
  // Never destroyed: the process ends right after the run, and tearing SimGrid down costs time.
  auto* engine = new sg4::Engine(&argc, argv.data());

  hosts_ = build_platform(topology_, used_pairs()).hosts;
  sg4::Link::on_communication_state_change_cb(
      [this](sgk::resource::NetworkAction& action, sgk::resource::Action::State /*previous*/) {
        // NetworkAction is not in SimGrid's installed headers; it derives from Action alone.
        on_network_action(reinterpret_cast<sgk::resource::Action&>(action));
      });
  create_issuers();

  finish_s_ = result.finish_s;
  pos_.assign(s_.n, 0);
  group_end_.assign(s_.n, 0);
  in_round_.assign(s_.n, kNoRound);
  remaining_.assign(s_.n, 0);
  // Records are stored at their transfer's index, so the trace comes out in schedule order.
  if (record_trace_) trace_.resize(num_transfers_);
  start_ranks();
  engine->run();

  if (failed_) throw InternalError("a SimGrid flow failed (link failure in the simulated platform)");
  if (transfers_done_ != num_transfers_) {
    throw InternalError(fmt::format("the simulation ended with {} of {} transfers done", transfers_done_, num_transfers_));
  }
  result.finish_s = std::move(finish_s_);
  result.transfers = num_transfers_;
  result.trace = std::move(trace_);
  return result;
}

void Simulation::create_issuers() {
  const std::uint32_t count = std::min<std::uint32_t>(s_.n, kMaxIssuers);
  issuer_queue_.resize(count);
  for (std::uint32_t k = 0; k < count; ++k) {
    issuer_wake_.push_back(sg4::Semaphore::create(0));
    sg4::Actor::create(fmt::format("issuer{}", k), hosts_[k], [this, k] { issuer_loop(k); });
  }
}

void Simulation::issuer_loop(std::uint32_t issuer) {
  std::vector<Ready> batch;
  std::vector<sg4::ExecPtr> execs;
  while (true) {
    issuer_wake_[issuer]->acquire();
    if (quit_) return;
    batch.clear();
    std::swap(batch, issuer_queue_[issuer]);
    issue(batch, execs);
  }
}

// Runs in an issuer actor. The flows are created here, so that they join this actor's (short)
// activity list, then configured and started together in one simcall: called from an actor, each
// Exec setter and start() is a simcall of its own, a context switch to maestro and back, four per
// flow. Inside simcall_answered the code runs in maestro, where they are plain calls.
void Simulation::issue(std::span<const Ready> batch, std::vector<sg4::ExecPtr>& execs) {
  execs.clear();
  for (std::size_t i = 0; i < batch.size(); ++i) execs.push_back(sg4::Exec::init());
  auto setup = [this, &execs, batch] {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const Transfer& tr = transfer(batch[i].transfer, batch[i].round);
      sg4::Exec& exec = *execs[i];
      exec.set_hosts({hosts_[tr.src], hosts_[tr.dst]});
      exec.set_flops_amounts({0.0, 0.0});
      exec.set_bytes_amounts({0.0, tr.chunk_count * chunk_bytes_, 0.0, 0.0});
      exec.start();
    }
  };
  sgk::actor::simcall_answered(setup);
  const double now = now_s();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    std::uint32_t slot;
    if (free_flights_.empty()) {
      slot = static_cast<std::uint32_t>(flights_.size());
      flights_.emplace_back();
    } else {
      slot = free_flights_.back();
      free_flights_.pop_back();
    }
    flight_of_.insert(execs[i]->get_impl(), slot);
    flights_[slot] = Flight{std::move(execs[i]), batch[i].transfer, batch[i].round, now};
  }
}

void Simulation::start_ranks() {
  for (Rank r = 0; r < s_.n; ++r) {
    pos_[r] = rank_begin_[r];
    if (pos_[r] == rank_begin_[r + 1]) continue;
    const std::uint32_t round = round_of(rank_transfers_[pos_[r]]);
    const double ready = std::max(arrival_s_[r], gate_s_[round_phase_[round]]);
    at_s(ready, [this, r] { enter(r); });
  }
}

// Rank r reaches the round of its next transfer: every transfer of that round whose other
// endpoint is already there starts now; the others start when that endpoint arrives.
void Simulation::enter(Rank r) {
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
    if (in_round_[other] == round) start_transfer(t, round);
  }
}

void Simulation::start_transfer(std::uint32_t t, std::uint32_t round) {
  const Transfer& tr = transfer(t, round);
  const double now = now_s();
  if (!(tr.chunk_count * chunk_bytes_ > 0)) {
    // A parallel execution cannot carry 0 bytes; a 0-byte CM02 flow costs its route latency.
    const double arrival = now + topology_.route_latency_s(tr.src, tr.dst);
    at_s(arrival, [this, t, round, now, arrival] { data_arrived(t, round, now, arrival); });
    return;
  }
  const std::uint32_t issuer = tr.src % static_cast<std::uint32_t>(issuer_queue_.size());
  if (issuer_queue_[issuer].empty()) issuer_wake_[issuer]->release();
  issuer_queue_[issuer].push_back(Ready{t, round});
}

void Simulation::on_network_action(sgk::resource::Action& action) {
  const auto state = action.get_state();
  if (state == sgk::resource::Action::State::FAILED) failed_ = true;
  if (state != sgk::resource::Action::State::FINISHED) return;
  arrived_.push_back(action.get_activity());
  if (!flush_armed_) {
    flush_armed_ = true;
    sgk::timer::Timer::set(sg4::Engine::get_clock(), [this] { flush_arrivals(); });
  }
}

void Simulation::flush_arrivals() {
  flush_armed_ = false;
  retired_[1].clear();
  std::swap(retired_[0], retired_[1]);
  const double now = now_s();
  for (std::size_t i = 0; i < arrived_.size(); ++i) {
    const std::optional<std::uint32_t> found = flight_of_.take(arrived_[i]);
    COLLSIM_ASSERT(found.has_value(), "a SimGrid flow finished that the engine did not start");
    const std::uint32_t slot = *found;
    Flight& flight = flights_[slot];
    retired_[0].push_back(std::move(flight.exec));
    free_flights_.push_back(slot);
    data_arrived(flight.transfer, flight.round, flight.start_s, now);
  }
  arrived_.clear();
}

// The data of transfer t has arrived: the sender is done; the receiver is done now, or after the
// reduction cost for a reduce.
void Simulation::data_arrived(std::uint32_t t, std::uint32_t round, double start_s, double now) {
  const Transfer& tr = transfer(t, round);
  const double bytes = tr.chunk_count * chunk_bytes_;
  rank_done_with(tr.src, now);
  if (tr.op == Op::Reduce && bytes > 0 && gamma_s_per_byte_ > 0) {
    const double applied = now + bytes * gamma_s_per_byte_;
    at_s(applied, [this, t, round, start_s, applied] {
      record(t, round, start_s, applied);
      rank_done_with(transfer(t, round).dst, applied);
    });
  } else {
    record(t, round, start_s, now);
    rank_done_with(tr.dst, now);
  }
}

void Simulation::record(std::uint32_t t, std::uint32_t round, double start_s, double end_s) {
  if (record_trace_) trace_[t] = TransferRecord{round_phase_[round], round_local_[round], transfer(t, round), start_s, end_s};
  if (++transfers_done_ < num_transfers_) return;
  // Everything is done: let the issuers return so that the simulation ends cleanly.
  quit_ = true;
  for (auto& wake : issuer_wake_) wake->release();
}

void Simulation::rank_done_with(Rank r, double now) {
  if (--remaining_[r] == 0) advance(r, now);
}

// All transfers of r's current round are done at `now`: finish, or move on to the next round,
// held back by the barrier gate of a new phase.
void Simulation::advance(Rank r, double now) {
  in_round_[r] = kNoRound;
  pos_[r] = group_end_[r];
  if (pos_[r] == rank_begin_[r + 1]) {
    finish_s_[r] = now;
    return;
  }
  const std::uint32_t round = round_of(rank_transfers_[pos_[r]]);
  const double gate = gate_s_[round_phase_[round]];
  if (gate > now) {
    at_s(gate, [this, r] { enter(r); });
  } else {
    enter(r);
  }
}

}  // namespace

RunResult simulate_with_simgrid(const Schedule& schedule, const RunConfig& config, std::span<const double> arrival_s,
                                std::span<const double> gate_s) {
  Simulation simulation(schedule, config, arrival_s, gate_s);
  return simulation.run();
}

}  // namespace collsim::detail
