// The execution core's per-rank rules on a toy network: every flow takes `latency_s + bytes /
// Bps`, independently of the others, and wake-ups come exactly at their date. Each expectation
// is worked out by hand from the rules (rendezvous of both ends, rounds in order per rank,
// barrier gates, gamma at the reduce receiver). Both ways of driving the rules, the event-driven
// RankWalk and the one-pass dataflow_sweep, must give these numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <queue>
#include <random>
#include <span>
#include <tuple>
#include <vector>

#include "collsim/sim/run_checks.hpp"
#include "execution_core.hpp"
#include "sim_test_support.hpp"

namespace collsim::detail {
namespace {

using test::hand;
using test::tx;

class ToyNetwork {
 public:
  ToyNetwork(const RankRounds& index, double latency_s, double Bps) : index_(index), latency_s_(latency_s), Bps_(Bps) {}

  void start_flow(std::uint32_t g, std::uint32_t round, double now_s) {
    const Transfer& t = index_.transfer(g, round);
    starts.emplace_back(t.src, t.dst, now_s);
    events_.push(Event{now_s + latency_s_ + walker_->rules().bytes(t) / Bps_, seq_++, true, g, round, {}});
  }
  void wake_at(double date_s, const Wake& wakeup) { events_.push(Event{date_s, seq_++, false, 0, 0, wakeup}); }

  void run(RankWalk<ToyNetwork>& walker) {
    walker_ = &walker;
    walker.begin(*this);
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      if (e.is_flow) {
        walker.data_arrived(*this, e.g, e.round, e.date_s);
      } else {
        walker.wake(*this, e.wakeup, e.date_s);
      }
    }
  }

  std::vector<std::tuple<Rank, Rank, double>> starts;  // (src, dst, start date) in start order

 private:
  struct Event {
    double date_s;
    std::uint64_t seq;
    bool is_flow;
    std::uint32_t g;
    std::uint32_t round;
    Wake wakeup;
    bool operator>(const Event& o) const { return date_s != o.date_s ? date_s > o.date_s : seq > o.seq; }
  };
  const RankRounds& index_;
  RankWalk<ToyNetwork>* walker_ = nullptr;
  double latency_s_;
  double Bps_;
  std::uint64_t seq_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
};

// The same toy network for the sweep.
class ToySweepNet {
 public:
  ToySweepNet(const CostRules& rules, double latency_s, double Bps) : rules_(rules), latency_s_(latency_s), Bps_(Bps) {}
  bool begin_round(std::uint32_t, std::uint32_t, std::span<const Transfer>) { return true; }
  double arrive(const Transfer& t, double start_s) { return start_s + latency_s_ + rules_.bytes(t) / Bps_; }
  void on_transfer(std::uint32_t, std::uint32_t, const Transfer&, double, double) {}

 private:
  const CostRules& rules_;
  double latency_s_;
  double Bps_;
};

struct Walked {
  RunResult result;
  std::vector<std::tuple<Rank, Rank, double>> starts;
};

// Bytes per chunk 1, so a flow of c chunks takes 1 + c seconds on the toy network. Also runs the
// sweep and expects the same finish times.
Walked walk(const Schedule& s, std::vector<double> arrival_s, StartMode mode = StartMode::Eager,
            double gamma_s_per_byte = 0, double chunk_bytes = 1, ExecutionCosts launch = {}) {
  const std::vector<double> gate_s = phase_gates(s, arrival_s, mode);
  const RankRounds index(s);
  const CostRules rules{chunk_bytes, gamma_s_per_byte, launch, s.n};
  RankWalk<ToyNetwork> walker(index, arrival_s, gate_s, rules, true);
  ToyNetwork network(index, 1.0, 1.0);
  network.run(walker);
  EXPECT_EQ(walker.finished_transfers(), index.num_transfers());
  Walked w{RunResult{}, network.starts};
  walker.finish(w.result);
  w.result.transfers = index.num_transfers();

  ToySweepNet sweep_net(rules, 1.0, 1.0);
  std::vector<double> ready(arrival_s);
  EXPECT_TRUE(dataflow_sweep<SecondsAlgebra>(s, gate_s, rules, ready, sweep_net));
  EXPECT_EQ(ready, w.result.finish_s) << "the sweep and the walk disagree";
  return w;
}

TEST(ExecutionCore, TransferStartsWhenItsLaterEndpointArrives) {
  // 0 -> 1; rank 1 arrives at 5: the flow starts at 5 and ends at 5 + 2.
  const Walked w = walk(hand(2, 1, 1, {{{tx(0, 1)}}}), {0.0, 5.0});
  ASSERT_EQ(w.starts.size(), 1u);
  EXPECT_EQ(std::get<2>(w.starts[0]), 5.0);
  EXPECT_EQ(w.result.finish_s, (std::vector<double>{7.0, 7.0}));
  ASSERT_EQ(w.result.trace.size(), 1u);
  EXPECT_EQ(w.result.trace[0].start_s, 5.0);
  EXPECT_EQ(w.result.trace[0].end_s, 7.0);
}

TEST(ExecutionCore, RankFinishesARoundBeforeTheNext) {
  // Round 0: 0 -> 1 (1 chunk, 2 s) and 2 -> 1 (3 chunks, 4 s); round 1: 1 -> 0. Rank 1 enters
  // round 1 when its slower transfer of round 0 is done, at 4; rank 0 was there since 2.
  const Walked w = walk(hand(3, 4, 2, {{{tx(0, 1), tx(2, 1, 0, 3)}, {tx(1, 0)}}}), {0.0, 0.0, 0.0});
  ASSERT_EQ(w.starts.size(), 3u);
  EXPECT_EQ(w.starts[2], std::make_tuple(Rank{1}, Rank{0}, 4.0));
  EXPECT_EQ(w.result.finish_s, (std::vector<double>{6.0, 6.0, 4.0}));
  EXPECT_EQ(w.result.transfers, 3u);
}

TEST(ExecutionCore, RankWithoutTransfersFinishesAtItsArrival) {
  const Walked w = walk(hand(3, 1, 1, {{{tx(0, 1)}}}), {0.0, 0.0, 9.0});
  EXPECT_EQ(w.result.finish_s[2], 9.0);
}

TEST(ExecutionCore, BarrierGateHoldsANewPhase) {
  // Phase 0: 0 -> 1; phase 1: 1 -> 2, rank 2 arrives at 10. Eager: phase 0 runs at once (0..2)
  // and 1 -> 2 starts at 10. Barrier: phase 0 waits for everyone in it... only ranks 0 and 1, so
  // the same; phase 1's gate is rank 2's arrival, 10.
  const Schedule s = hand(3, 1, 1, {{{tx(0, 1)}}, {{tx(1, 2)}}});
  for (StartMode mode : {StartMode::Eager, StartMode::Barrier}) {
    const Walked w = walk(s, {0.0, 0.0, 10.0}, mode);
    EXPECT_EQ(w.result.finish_s, (std::vector<double>{2.0, 12.0, 12.0})) << start_mode_name(mode);
  }
  // A late rank inside the first phase holds a barrier start of every rank of that phase.
  const Schedule one_phase = hand(3, 1, 1, {{{tx(0, 1)}, {tx(1, 2)}}});
  const Walked eager = walk(one_phase, {0.0, 0.0, 10.0}, StartMode::Eager);
  const Walked barrier = walk(one_phase, {0.0, 0.0, 10.0}, StartMode::Barrier);
  EXPECT_EQ(std::get<2>(eager.starts[0]), 0.0);
  EXPECT_EQ(std::get<2>(barrier.starts[0]), 10.0);
  EXPECT_EQ(barrier.result.finish_s, (std::vector<double>{12.0, 14.0, 14.0}));
}

TEST(ExecutionCore, GammaDelaysOnlyTheReduceReceiver) {
  // A 2-chunk reduce 0 -> 1 at 4 bytes per chunk: data arrives at 1 + 8 = 9, the receiver is
  // done 8 * 0.5 = 4 s later; the sender at 9. A copy pays no gamma.
  const Walked reduce = walk(hand(2, 2, 1, {{{tx(0, 1, 0, 2, Op::Reduce)}}}), {0.0, 0.0}, StartMode::Eager, 0.5, 4.0);
  EXPECT_EQ(reduce.result.finish_s, (std::vector<double>{9.0, 13.0}));
  EXPECT_EQ(reduce.result.trace[0].end_s, 13.0);
  const Walked copy = walk(hand(2, 2, 1, {{{tx(0, 1, 0, 2)}}}), {0.0, 0.0}, StartMode::Eager, 0.5, 4.0);
  EXPECT_EQ(copy.result.finish_s, (std::vector<double>{9.0, 9.0}));
}

TEST(ExecutionCore, LaunchOverheadsByExecutionStyle) {
  // Round 0: 0 -> 1; round 1: 1 -> 2 (each 2 s on the toy network), launch 0.5 s.
  const Schedule s = hand(3, 1, 1, {{{tx(0, 1)}, {tx(1, 2)}}});
  // Fused: every rank pays one launch before its first round. 0 -> 1 starts at 0.5, ends 2.5;
  // rank 1's second round needs no launch: 1 -> 2 starts at 2.5 (rank 2 launched at 0.5).
  const Walked fused = walk(s, {0.0, 0.0, 0.0}, StartMode::Eager, 0, 1, ExecutionCosts{ExecutionStyle::Fused, 0.5});
  EXPECT_EQ(fused.result.finish_s, (std::vector<double>{2.5, 4.5, 4.5}));
  // P2pRounds: a launch before every round: 1 -> 2 starts at 2.5 + 0.5 = 3.
  const Walked rounds =
      walk(s, {0.0, 0.0, 0.0}, StartMode::Eager, 0, 1, ExecutionCosts{ExecutionStyle::P2pRounds, 0.5});
  EXPECT_EQ(rounds.result.finish_s, (std::vector<double>{2.5, 5.0, 5.0}));
  ASSERT_EQ(rounds.starts.size(), 2u);
  EXPECT_EQ(std::get<2>(rounds.starts[1]), 3.0);
  // A late rank pays its launch after arriving: rank 2 arrives at 10, starts at 10.5.
  const Walked late =
      walk(s, {0.0, 0.0, 10.0}, StartMode::Eager, 0, 1, ExecutionCosts{ExecutionStyle::P2pRounds, 0.5});
  EXPECT_EQ(late.result.finish_s, (std::vector<double>{2.5, 12.5, 12.5}));
}

TEST(ExecutionCore, TraceIsInScheduleOrder) {
  // 6 rounds of two transfers on 4 ranks: every transfer is recorded at its schedule index.
  std::vector<std::vector<Transfer>> rounds;
  for (int r = 0; r < 6; ++r) rounds.push_back({tx(r % 4, (r + 1) % 4), tx((r + 2) % 4, (r + 3) % 4)});
  const Schedule s = hand(4, 1, 1, {rounds});
  const Walked w = walk(s, {0.0, 0.0, 0.0, 0.0});
  ASSERT_EQ(w.result.trace.size(), 12u);
  std::size_t i = 0;
  for (const auto& round : rounds) {
    for (const Transfer& t : round) {
      EXPECT_EQ(w.result.trace[i].transfer.src, t.src);
      EXPECT_EQ(w.result.trace[i].transfer.dst, t.dst);
      EXPECT_EQ(w.result.trace[i].round, i / 2);
      ++i;
    }
  }
  for (const TransferRecord& rec : w.result.trace) EXPECT_EQ(rec.end_s - rec.start_s, 2.0);
}

}  // namespace
}  // namespace collsim::detail

namespace collsim::detail {
namespace {

// RankRounds against a direct reading of the schedule: each rank's rank-rounds in order, with
// the rounds it skips left out and its transfers of each round in schedule order (one or
// several per round, ranks with none), on random multi-phase schedules.
// The records are in round order (what keeps the event path's reads in cache): a per-rank
// layout would put rank 1's first round after rank 0's last.
TEST(ExecutionCore, RankRoundsFollowTheScheduleInRoundOrder) {
  std::mt19937_64 rng(2718);
  for (int c = 0; c < 50; ++c) {
    const Rank n = 3 + static_cast<Rank>(rng() % 10);
    const Schedule s = test::hand(n, 8, 3 * n,
                                  {test::random_rounds(rng, n, 8, 1 + rng() % 6, 1 + rng() % 8),
                                   test::random_rounds(rng, n, 8, 1 + rng() % 6, 1 + rng() % 8)});
    const RankRounds index(s);
    // Expected: per rank, (global round, transfers) in schedule order.
    std::vector<std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>>> expected(n);
    std::uint32_t g = 0;
    std::uint32_t round_id = 0;
    for (const Phase& phase : s.phases) {
      for (std::size_t r = 0; r < phase.num_rounds(); ++r, ++round_id) {
        for (const Transfer& t : phase.round(r)) {
          for (const Rank e : {t.src, t.dst}) {
            auto& mine = expected[e];
            if (mine.empty() || mine.back().first != round_id) mine.emplace_back(round_id, std::vector<std::uint32_t>{});
            mine.back().second.push_back(g);
          }
          ++g;
        }
      }
    }
    std::vector<std::pair<std::uint64_t, std::uint32_t>> records;  // (k, round) of every rank
    for (Rank r = 0; r < n; ++r) {
      std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>> got;
      for (std::uint64_t k = index.first(r); k != RankRounds::kEnd; k = index.next(k)) {
        const auto xfers = index.xfers(k);
        got.emplace_back(index.round_of(k), std::vector<std::uint32_t>(xfers.begin(), xfers.end()));
        records.emplace_back(k, index.round_of(k));
        for (const std::uint32_t x : xfers) {
          const Transfer& t = index.transfer(x, index.round_of(k));
          ASSERT_TRUE(t.src == r || t.dst == r) << "case " << c << " rank " << r << " transfer " << x;
        }
      }
      ASSERT_EQ(got, expected[r]) << "case " << c << " rank " << r;
    }
    std::sort(records.begin(), records.end());
    for (std::size_t i = 0; i < records.size(); ++i) {
      ASSERT_EQ(records[i].first, i) << "case " << c << ": records are not dense";
      if (i > 0) {
        ASSERT_LE(records[i - 1].second, records[i].second) << "case " << c << " record " << i;
      }
    }
  }
}

}  // namespace
}  // namespace collsim::detail
