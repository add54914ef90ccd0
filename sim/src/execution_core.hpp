// The per-rank execution rules of schedule.hpp, written once for every engine (private to sim/).
//
// The rules: each rank walks its own rounds in order (phases concatenated) and skips rounds in
// which it has nothing to do; it cannot act before its arrival; a transfer starts when both of its
// endpoints have reached its round (rendezvous) and not before its phase's gate (barrier mode);
// a rank moves to its next round when all its transfers of the current one are done; the sender of
// a transfer is done when the data has arrived, a reducing receiver when it has also added the
// data (CostRules). An engine supplies only its network model: when a started flow's data arrives.
//
// Two ways to drive the rules, one for each kind of network model:
//  * RankWalk, event-driven, for networks in which a flow's duration depends on what else is in
//    flight (max-min sharing in replay's event path, SimGrid). The engine owns the clock; the walk
//    tells it which flows to start and which wake-ups to schedule, and the engine reports back
//    when a flow's data arrived and when a wake-up fires.
//  * dataflow_sweep(), one pass in round order, for networks in which a flow's duration is known
//    when it starts (replay's contention-free fast path, calibration's cost walk). There a
//    transfer's start is max(ready(src), ready(dst), gate) with ready(r) the end of r's previous
//    round: the rendezvous rule in closed form. The sweep is generic in its time type so that the
//    cost walk can carry critical-path coefficients along with the times.
// Both drive the same RankRounds index and CostRules; tests check that they agree.
//
// Switch ranks (schedule.hpp, NVLS) are ranks n .. n+m-1 here like any other: they walk their
// rounds and rendezvous, which is what makes a switch's multicast wait for every contribution.
// They arrive at 0 and pay no launch and no reduction cost (CostRules), and the finish times
// handed back are those of the GPU ranks only.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/models/error.hpp"
#include "collsim/sim/engine.hpp"
#include "collsim/sim/run_checks.hpp"

namespace collsim::detail {

inline constexpr std::uint32_t kNoRound = std::numeric_limits<std::uint32_t>::max();

/// The agreement cost when RunConfig::agreement_s is not given: every rank sets its bit in
/// an arrival word (in NVSwitch memory, or one GPU's memory over NVLink) with an atomic
/// fetch-or on arrival, and learns who is present from the word: one write and one read, each
/// one message latency, 2 x the route latency between ranks 0 and n-1 (alpha on a star, the
/// network alpha on a cluster). Seconds.
double default_agreement_s(const Topology& topology);

/// What an engine executes, decided once for every engine (the engines' common entry): the
/// validated arrival times, the schedule, and each phase's gate.
///
/// Run-time relabelling: when the schedule's table row says relabel_at_run_time, the schedule was
/// built for late ranks n-k..n-1 (k = Schedule::late_ranks) arriving in that order; the plan
/// relabels it so that label n-k+j is the rank that actually arrived (n-k+j)-th (ties: lower rank
/// first, so equal arrivals keep the labels). Early labels keep their rank where they can. Who
/// the first n-k are is decided when the (n-k)-th rank arrives, late label l when it arrives;
/// the present ranks know it agreement_s later (RunConfig::agreement_s or
/// default_agreement_s), and no phase starts before every label it uses is known. Barrier-mode
/// gates apply on top.
class RunPlan {
 public:
  /// Throws what checked_arrivals() throws, and ConfigError for a negative or non-finite
  /// agreement cost.
  RunPlan(const Schedule& schedule, const RunConfig& config);
  RunPlan(const RunPlan&) = delete;
  RunPlan& operator=(const RunPlan&) = delete;

  /// The schedule to execute: the one given, or its relabelled copy.
  const Schedule& schedule() const { return relabelled_ ? *relabelled_ : given_; }
  const std::vector<double>& arrival_s() const { return arrival_s_; }
  /// Per phase: the earliest time any of its transfers may start.
  const std::vector<double>& gate_s() const { return gate_s_; }
  bool relabelled_at_run_time() const { return run_time_; }
  /// The agreement cost charged (0 unless relabelled at run time), seconds.
  double agreement_s() const { return agreement_s_; }

 private:
  const Schedule& given_;
  std::optional<Schedule> relabelled_;
  std::vector<double> arrival_s_;
  std::vector<double> gate_s_;
  bool run_time_ = false;
  double agreement_s_ = 0;
};

/// What a run costs besides the network: the receiver's reduction and the launch overheads of
/// the execution style. Every engine charges them through here, so a new per-transfer or
/// per-round cost is added in one place.
struct CostRules {
  double chunk_bytes = 0;        ///< bytes per chunk (buffer size / num_chunks)
  double gamma_s_per_byte = 0;   ///< reduction cost at a `reduce` receiver
  ExecutionCosts execution;      ///< launch overheads
  /// Ranks below this are GPUs; the others are switch ranks (the schedule's n). Every engine
  /// sets it; the default treats every rank as a GPU.
  Rank gpu_ranks = std::numeric_limits<Rank>::max();

  /// Seconds rank r spends before it can take part in one of its rounds, from when it reached
  /// it: a launch before every round with P2pRounds, before its first one only when Fused. A
  /// switch launches nothing.
  double entry_s(Rank r, bool first_round) const { return launches_before(r, first_round) ? execution.launch_s : 0.0; }
  /// Whether rank r launches a kernel (or NCCL group) before this round, even at launch_s = 0
  /// (the cost walk counts launches on the critical path whatever their current price).
  bool launches_before(Rank r, bool first_round) const {
    if (r >= gpu_ranks) return false;
    return execution.style == ExecutionStyle::P2pRounds || first_round;
  }

  /// 1 / Topology::switch_reduction_efficiency: wire bytes per data byte to or from a switch rank.
  double switch_wire_factor = 1.0;

  /// Data bytes `t` moves.
  double data_bytes(const Transfer& t) const { return t.chunk_count * chunk_bytes; }
  /// Bytes the network carries for `t`: its data, or more to or from a switch rank, whose reduce
  /// and multicast run below the port's line rate. Every engine times flows with this.
  double bytes(const Transfer& t) const {
    const double data = data_bytes(t);
    return t.src >= gpu_ranks || t.dst >= gpu_ranks ? data * switch_wire_factor : data;
  }
  /// Bytes a GPU receiver reduces for `t` (0 for a copy, and for a switch, which adds at line rate).
  double reduced_bytes(const Transfer& t) const {
    return t.op == Op::Reduce && t.dst < gpu_ranks ? data_bytes(t) : 0.0;
  }
  /// Seconds a receiver spends applying `t` after its data arrived.
  double apply_s(const Transfer& t) const { return reduced_bytes(t) * gamma_s_per_byte; }
};

/// The rules for `schedule` on `topology` (its gamma and switch efficiency) with the given
/// launch costs (gpu_ranks = schedule.n).
inline CostRules cost_rules(const Schedule& schedule, double size_bytes, const Topology& topology,
                            ExecutionCosts execution) {
  return CostRules{size_bytes / schedule.num_chunks, topology.link.gamma_s_per_byte, execution, schedule.n,
                   1.0 / topology.switch_reduction_efficiency};
}

/// Each rank's own rounds (rank-rounds), and the global numbering of transfers (schedule order)
/// and rounds (phases concatenated). Built once per run; validates every transfer.
///
/// Rank-rounds are stored in round order, each linked to its rank's next one: on the event path a
/// rank's consecutive rank-rounds are visited far apart in time (every other rank moves in
/// between), but the ranks are at about the same rounds, so the records in use at any moment lie
/// close together (as do their transfers in the schedule) and stay in cache.
class RankRounds {
 public:
  static constexpr std::uint64_t kEnd = std::numeric_limits<std::uint64_t>::max();

  /// Throws ScheduleError for a malformed transfer, ConfigError past 2^32 - 1 transfers or when
  /// 2^32 or more rank-rounds of other ranks lie between two of one rank's (its link would not fit).
  explicit RankRounds(const Schedule& schedule);

  const Schedule& schedule() const { return s_; }
  std::uint32_t num_rounds() const { return static_cast<std::uint32_t>(round_phase_.size()); }
  std::uint64_t num_transfers() const { return num_transfers_; }
  std::uint32_t phase_of(std::uint32_t round) const { return round_phase_[round]; }
  std::uint32_t local_round(std::uint32_t round) const { return round_local_[round]; }
  /// Global transfer g of global round `round`.
  const Transfer& transfer(std::uint32_t g, std::uint32_t round) const {
    const std::uint32_t p = round_phase_[round];
    return s_.phases[p].transfers()[g - phase_first_[p]];
  }

  /// Rank r's first rank-round, kEnd when it has none; next(k) is the rank's rank-round after
  /// k, kEnd after its last. Rank-round k is global round round_of(k); its transfers are xfers(k).
  std::uint64_t first(Rank r) const { return first_[r]; }
  std::uint64_t next(std::uint64_t k) const { return rr_[k].next == 0 ? kEnd : k + rr_[k].next; }
  std::uint32_t round_of(std::uint64_t k) const { return rr_[k].round; }
  std::span<const std::uint32_t> xfers(std::uint64_t k) const {
    const RankRound& e = rr_[k];
    if (e.x[1] == kOne) return {e.x.data(), 1};
    if (e.x[1] != kList) return {e.x.data(), 2};
    const std::uint64_t at = list_at_[e.x[0]];
    return {rank_xfers_.data() + at, static_cast<std::size_t>(list_at_[e.x[0] + 1] - at)};
  }

 private:
  // Everything the walk reads to enter a rank-round, in 16 bytes: a rank takes part in one or
  // two transfers of most of its rounds (a ring's send and receive, a matching's exchange), and
  // those are held in x; x[1] says which case it is. Holding two inline, instead of one plus a
  // list for the rest, is what lets a flat 16,384-GPU ring (5.4e8 transfers) fit in 24 GiB on
  // the event path: 16 bytes per rank-round instead of 32. Transfer numbers stay below kList
  // (the constructor refuses 2^32 - 1 transfers or more), so the two markers cannot be transfers.
  //   x[1] == kOne:  one transfer, x[0];
  //   x[1] == kList: three or more, rank_xfers_[list_at_[x[0]] .. list_at_[x[0] + 1]);
  //   otherwise:     two, x[0] then x[1].
  // `next`: how many records later the rank's next rank-round is (0: none).
  static constexpr std::uint32_t kOne = std::numeric_limits<std::uint32_t>::max();
  static constexpr std::uint32_t kList = kOne - 1;
  struct RankRound {
    std::uint32_t round;
    std::uint32_t next;
    std::array<std::uint32_t, 2> x;
  };
  static_assert(sizeof(RankRound) == 16);

 public:
  /// Memory per record and per listed transfer (event_index_bytes).
  static constexpr std::size_t kRecordBytes = sizeof(RankRound);
  static constexpr std::size_t kListedBytes = sizeof(std::uint32_t);

 private:

  const Schedule& s_;
  std::uint64_t num_transfers_ = 0;
  std::vector<std::uint32_t> round_phase_;
  std::vector<std::uint32_t> round_local_;
  std::vector<std::uint64_t> phase_first_;
  std::vector<std::uint64_t> first_;       // per rank
  std::vector<RankRound> rr_;              // in round order
  std::vector<std::uint64_t> list_at_;     // per listed rank-round, then the end of the last list
  std::vector<std::uint32_t> rank_xfers_;  // their transfers, in record order
};

/// A wake-up the walk asks its engine for: at its date, the engine calls RankWalk::wake(w).
struct Wake {
  enum class Kind : std::uint8_t { Arrive, Launched, GateOpens, Applied };
  Kind kind;
  std::uint32_t id;     ///< rank (Arrive, Launched) or global transfer (GateOpens, Applied)
  std::uint32_t round;  ///< global round of the transfer (GateOpens, Applied)
};

/// The event-driven walk. `Net` is the engine; it provides
///   void wake_at(double date_s, Wake w);                          // call walk.wake(w) then
///   void start_flow(std::uint32_t g, std::uint32_t round, double now_s);  // carry transfer g,
///                                      // then call walk.data_arrived(g, round, date) once
/// Dates passed to wake_at are never earlier than the date being processed.
template <class Net>
class RankWalk {
 public:
  RankWalk(const RankRounds& index, std::span<const double> arrival_s, std::span<const double> gate_s,
           CostRules rules, bool record_trace)
      : x_(index), arrival_s_(arrival_s.begin(), arrival_s.end()), gate_s_(gate_s), rules_(rules),
        record_trace_(record_trace) {
    const Rank n = index.schedule().num_ranks();
    arrival_s_.resize(n, 0.0);  // switch ranks are there from the start
    cur_rr_.assign(n, 0);
    cur_round_.assign(n, kNoRound);
    pending_.assign(n, 0);
    finish_s_ = arrival_s_;
    if (record_trace_) {
      start_s_.resize(index.num_transfers());
      trace_.resize(index.num_transfers());
    }
  }

  const CostRules& rules() const { return rules_; }

  /// Asks `net` to wake every rank that has work at its arrival.
  void begin(Net& net) {
    for (Rank r = 0; r < x_.schedule().num_ranks(); ++r) {
      if (x_.first(r) != RankRounds::kEnd) net.wake_at(arrival_s_[r], Wake{Wake::Kind::Arrive, r, 0});
    }
  }

  void wake(Net& net, const Wake& w, double now_s) {
    switch (w.kind) {
      case Wake::Kind::Arrive: reach(net, w.id, x_.first(w.id), now_s); break;
      case Wake::Kind::Launched: enter(net, w.id, cur_rr_[w.id], now_s); break;
      case Wake::Kind::GateOpens: start(net, w.id, w.round, now_s); break;
      case Wake::Kind::Applied: applied(net, w.id, w.round, now_s); break;
    }
  }

  /// The network delivered transfer g's data at now_s: the sender is done; the receiver is done
  /// once it has applied the data.
  void data_arrived(Net& net, std::uint32_t g, std::uint32_t round, double now_s) {
    const Transfer& t = x_.transfer(g, round);
    const double apply_s = rules_.apply_s(t);
    if (apply_s > 0) {
      net.wake_at(now_s + apply_s, Wake{Wake::Kind::Applied, g, round});
    } else {
      applied(net, g, round, now_s);
    }
    one_done(net, t.src, now_s);
  }

  std::uint64_t finished_transfers() const { return finished_; }

  /// Moves the per-rank finish times (and the trace, in schedule order) into `out`. Asserts that
  /// every transfer finished.
  void finish(RunResult& out) {
    COLLSIM_ASSERT(finished_ == x_.num_transfers(),
                   fmt::format("{} of {} transfers finished", finished_, x_.num_transfers()));
    finish_s_.resize(x_.schedule().n);  // GPU ranks only
    out.finish_s = std::move(finish_s_);
    if (record_trace_) out.trace = std::move(trace_);
  }

 private:
  // Rank r has finished everything before rank-round k at t; it enters k once its launch
  // overhead for k (if any) is paid.
  void reach(Net& net, Rank r, std::uint64_t k, double t) {
    const double entry_s = rules_.entry_s(r, k == x_.first(r));
    if (entry_s > 0) {
      cur_rr_[r] = k;  // cur_round_[r] stays kNoRound: partners must not start with r yet
      net.wake_at(t + entry_s, Wake{Wake::Kind::Launched, r, 0});
    } else {
      enter(net, r, k, t);
    }
  }

  // Rank r enters rank-round k at t: every transfer of it whose partner is already there starts.
  void enter(Net& net, Rank r, std::uint64_t k, double t) {
    cur_rr_[r] = k;
    const std::uint32_t round = x_.round_of(k);
    cur_round_[r] = round;
    const auto xfers = x_.xfers(k);
    pending_[r] = static_cast<std::uint32_t>(xfers.size());
    for (const std::uint32_t g : xfers) {
      const Transfer& tr = x_.transfer(g, round);
      const Rank partner = tr.src == r ? tr.dst : tr.src;
      if (cur_round_[partner] != round) continue;  // the partner's own enter() will start it
      const double gate = gate_s_[x_.phase_of(round)];
      if (gate > t) {
        net.wake_at(gate, Wake{Wake::Kind::GateOpens, g, round});
      } else {
        start(net, g, round, t);
      }
    }
  }

  void start(Net& net, std::uint32_t g, std::uint32_t round, double t) {
    if (record_trace_) start_s_[g] = t;
    net.start_flow(g, round, t);
  }

  void applied(Net& net, std::uint32_t g, std::uint32_t round, double t) {
    const Transfer& tr = x_.transfer(g, round);
    if (record_trace_) {
      trace_[g] = TransferRecord{x_.phase_of(round), x_.local_round(round), tr, start_s_[g], t};
    }
    ++finished_;
    one_done(net, tr.dst, t);
  }

  void one_done(Net& net, Rank r, double t) {
    COLLSIM_ASSERT(pending_[r] > 0, fmt::format("rank {} completed more transfers than it had", r));
    if (--pending_[r] > 0) return;
    finish_s_[r] = t;
    const std::uint64_t next = x_.next(cur_rr_[r]);
    if (next != RankRounds::kEnd) {
      cur_round_[r] = kNoRound;  // between rounds until it enters the next one
      reach(net, r, next, t);
    } else {
      cur_round_[r] = kNoRound;
    }
  }

  const RankRounds& x_;
  std::vector<double> arrival_s_;         // per rank, switch ranks included
  std::span<const double> gate_s_;
  CostRules rules_;
  bool record_trace_;
  std::vector<std::uint64_t> cur_rr_;
  std::vector<std::uint32_t> cur_round_;  // kNoRound before arrival and after the last round
  std::vector<std::uint32_t> pending_;
  std::vector<double> finish_s_;
  std::vector<double> start_s_;           // per transfer, only when tracing
  std::vector<TransferRecord> trace_;
  std::uint64_t finished_ = 0;
};

/// Time arithmetic the sweep needs, specialised for plain seconds; a cost walk supplies its own
/// (a time with critical-path coefficients) with the same three functions.
struct SecondsAlgebra {
  using Time = double;
  static Time later(Time a, Time b) { return std::max(a, b); }
  static Time at_least(Time t, double gate_s) { return std::max(t, gate_s); }
  static Time applied(Time arrived, const Transfer& /*t*/, double /*reduced_bytes*/, double apply_s) {
    return arrived + apply_s;
  }
  /// `t` plus one launch of `seconds` (adding 0 leaves t exact).
  static Time launched(Time t, double seconds) { return t + seconds; }
};

/// One pass over the transfers in round order; exact when every transfer's arrival is known at
/// its start. `ready` holds each GPU rank's arrival on entry and its finish on return (switch
/// ranks arrive at Time{}, zero, and are dropped from it at the end). `net`
/// provides
///   bool begin_round(std::uint32_t phase, std::uint32_t round, std::span<const Transfer>);
///   Time arrive(const Transfer& t, const Time& start);   // when t's data reaches t.dst
///   void on_transfer(phase, round, const Transfer&, const Time& start, const Time& applied);
/// begin_round() returning false abandons the sweep (the network cannot time this round on its
/// own, e.g. two flows share a link); dataflow_sweep then returns false and `ready` is unspecified.
template <class Algebra, class Net>
bool dataflow_sweep(const Schedule& s, std::span<const double> gate_s, const CostRules& rules,
                    std::vector<typename Algebra::Time>& ready, Net& net) {
  using Time = typename Algebra::Time;
  // ready[r]: when r entered its current round; done[r]: when all it did so far ended.
  ready.resize(s.num_ranks(), Time{});
  std::vector<Time> done(ready);
  std::vector<std::uint32_t> rank_round(s.num_ranks(), kNoRound);
  std::uint32_t round_id = 0;
  for (std::size_t p = 0; p < s.phases.size(); ++p) {
    const Phase& phase = s.phases[p];
    for (std::size_t r = 0; r < phase.num_rounds(); ++r, ++round_id) {
      const auto round = phase.round(r);
      if (!net.begin_round(static_cast<std::uint32_t>(p), static_cast<std::uint32_t>(r), round)) return false;
      for (const Transfer& t : round) {
        for (const Rank e : {t.src, t.dst}) {
          if (rank_round[e] == round_id) continue;
          // e enters this round when everything before it is done and its launch is paid.
          const bool first = rank_round[e] == kNoRound;
          ready[e] = rules.launches_before(e, first) ? Algebra::launched(done[e], rules.entry_s(e, first)) : done[e];
          rank_round[e] = round_id;
        }
        const Time start = Algebra::at_least(Algebra::later(ready[t.src], ready[t.dst]), gate_s[p]);
        const Time arrived = net.arrive(t, start);
        const Time applied = Algebra::applied(arrived, t, rules.reduced_bytes(t), rules.apply_s(t));
        done[t.src] = Algebra::later(done[t.src], arrived);
        done[t.dst] = Algebra::later(done[t.dst], applied);
        net.on_transfer(static_cast<std::uint32_t>(p), static_cast<std::uint32_t>(r), t, start, applied);
      }
    }
  }
  ready.swap(done);
  ready.resize(s.n);
  return true;
}

}  // namespace collsim::detail
