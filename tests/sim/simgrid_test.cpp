// The simgrid engine: exact alpha-beta timing, schedule semantics, contention, reentrancy, and
// agreement with the replay engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"
#include "collsim/sim/engine.hpp"
#include "collsim/sim/replay_engine.hpp"
#include "sim_test_support.hpp"

#ifdef COLLSIM_HAVE_SIMGRID
#include <csignal>

#include "child_process.hpp"
#include "collsim/sim/simgrid_engine.hpp"
#endif

namespace collsim {
namespace {

#ifdef COLLSIM_HAVE_SIMGRID

using test::kAlpha;
using test::kB;
using test::kLink;
using test::config;
using test::hand;
using test::tx;

void expect_rel(double actual, double expected, double tol = 1e-9, const std::string& what = {}) {
  EXPECT_LE(std::fabs(actual - expected), tol * std::fabs(expected)) << actual << " vs " << expected << " " << what;
}

RunResult simgrid(const Schedule& s, const RunConfig& c) { return make_simgrid_engine()->run(s, c); }


TEST(SimGrid, MakeEngineKnowsIt) {
  const auto engine = make_engine("simgrid");
  EXPECT_EQ(engine->name(), "simgrid");
}

TEST(SimGrid, SingleTransferIsLatencySumPlusBytesOverBottleneck) {
  // A 2-link route with different latencies and bandwidths: sum(latency) + m / min(bandwidth).
  Topology t = make_nvswitch(2, kLink);
  t.links[0].latency_s = 1.25e-6;   // GPU 0 up
  t.links[0].bandwidth_Bps = 300e9;
  t.links[3].latency_s = 0.5e-6;    // GPU 1 down
  t.links[3].bandwidth_Bps = 200e9;
  const Schedule one = hand(2, 1, 1, {{{tx(0, 1)}}});
  for (double m : {0.0, 1.0, 1e3, 12345.0, 1e9, 1e9 / 3}) {
    const RunResult r = simgrid(one, config(t, m));
    const double expected = (1.25e-6 + 0.5e-6) + m / 200e9;
    expect_rel(r.finish_s[0], expected, 1e-12, "m=" + std::to_string(m));
    expect_rel(r.finish_s[1], expected, 1e-12);
    expect_rel(r.time_s, expected, 1e-12);
    EXPECT_EQ(r.transfers, 1u);
    EXPECT_EQ(r.engine, "simgrid");
  }
  // The plain nvswitch message is alpha + m / B.
  const RunResult r = simgrid(one, config(make_nvswitch(2, kLink), 1 << 20));
  expect_rel(r.time_s, kAlpha + (1 << 20) / kB, 1e-12);
}

TEST(SimGrid, RingOnNvSwitchMatchesAlphaBeta) {
  const double size = 1 << 30;
  for (Rank n : {2u, 5u, 8u, 16u}) {
    const Schedule s = generate_schedule("ring", AlgorithmOptions{n, {}, 0});
    const double expected = 2.0 * (n - 1) * (kAlpha + size / n / kB);
    const RunResult r = simgrid(s, config(make_nvswitch(n, kLink), size));
    EXPECT_EQ(r.transfers, 2u * n * (n - 1));
    expect_rel(r.time_s, expected);
    expect_rel(r.time_after_last_arrival_s, expected);
    ASSERT_EQ(r.finish_s.size(), n);
    for (double f : r.finish_s) expect_rel(f, expected);
  }
}

TEST(SimGrid, ZeroBytesCostLatencyOnly) {
  const Schedule s = generate_schedule("ring", AlgorithmOptions{4, {}, 0});
  RunConfig c = config(make_nvswitch(4, kLink), 0);
  c.record_trace = true;
  const RunResult r = simgrid(s, c);
  expect_rel(r.time_s, 6 * kAlpha, 1e-12);
  ASSERT_EQ(r.trace.size(), s.num_transfers());
  for (const TransferRecord& rec : r.trace) expect_rel(rec.end_s - rec.start_s, kAlpha, 1e-9);
}

TEST(SimGrid, FractionalChunkBytesAreExact) {
  // 1 GiB + 1 byte over 7 chunks is not a whole number of bytes per message.
  const Rank n = 7;
  const double size = (1 << 30) + 1.0;
  const Schedule s = generate_schedule("ring", AlgorithmOptions{n, {}, 0});
  const RunResult r = simgrid(s, config(make_nvswitch(n, kLink), size));
  expect_rel(r.time_s, 2.0 * (n - 1) * (kAlpha + size / n / kB), 1e-12);
}

TEST(SimGrid, StragglerShiftsTheRingByItsDelay) {
  const Rank n = 8;
  const double size = 1 << 26;
  const double d = 250e-6;
  const Schedule s = generate_schedule("ring", AlgorithmOptions{n, {}, 0});
  const double ring = 2.0 * (n - 1) * (kAlpha + size / n / kB);
  for (StartMode mode : {StartMode::Eager, StartMode::Barrier}) {
    std::vector<double> arrival(n, 0.0);
    arrival[3] = d;
    const RunResult r = simgrid(s, config(make_nvswitch(n, kLink), size, mode, arrival));
    expect_rel(r.time_s, d + ring, 1e-9, start_mode_name(mode));
    expect_rel(r.time_after_last_arrival_s, ring, 1e-9, start_mode_name(mode));
    EXPECT_EQ(r.first_arrival_s, 0.0);
    EXPECT_EQ(r.last_arrival_s, d);
  }
  // Everyone late by the same amount: the whole run moves.
  const RunResult r = simgrid(s, config(make_nvswitch(n, kLink), size, StartMode::Eager, std::vector<double>(n, d)));
  for (double f : r.finish_s) expect_rel(f, d + ring);
  expect_rel(r.time_s, ring);
}

TEST(SimGrid, BarrierHoldsAPhaseUntilAllItsRanksArrived) {
  // Phase 0: 0 -> 1, then 1 -> 2; rank 2 is late. Eager lets 0 -> 1 go at time 0, barrier waits.
  const double m = 1 << 20;
  const double d = 1e-3;
  const double msg = kAlpha + m / kB;
  const Schedule s = hand(3, 1, 1, {{{tx(0, 1)}, {tx(1, 2)}}});
  const RunResult eager = simgrid(s, config(make_nvswitch(3, kLink), m, StartMode::Eager, {0, 0, d}));
  const RunResult barrier = simgrid(s, config(make_nvswitch(3, kLink), m, StartMode::Barrier, {0, 0, d}));
  expect_rel(eager.finish_s[0], msg);
  expect_rel(barrier.finish_s[0], d + msg);
  expect_rel(eager.finish_s[2], d + msg);
  expect_rel(barrier.finish_s[2], d + 2 * msg);
}

TEST(SimGrid, TwoFlowsOnOneLinkShareItsBandwidth) {
  const double m = 1 << 24;
  // Rank 0 sends to 1 and 2 in one round (two ports): both flows share GPU 0's up link.
  const RunResult shared = simgrid(hand(3, 2, 2, {{{tx(0, 1, 0), tx(0, 2, 1)}}}), config(make_nvswitch(3, kLink), 2 * m));
  for (Rank r : {0u, 1u, 2u}) expect_rel(shared.finish_s[r], kAlpha + m / (kB / 2));
  // Opposite directions use different directed links: no sharing (crosstraffic is off).
  const RunResult swap = simgrid(hand(2, 1, 1, {{{tx(0, 1), tx(1, 0)}}}), config(make_nvswitch(2, kLink), m));
  for (Rank r : {0u, 1u}) expect_rel(swap.finish_s[r], kAlpha + m / kB);
}

TEST(SimGrid, MaxMinRatesChangeWhenAFlowLeaves) {
  // 0 -> 1 (m bytes) and 0 -> 2 (3m bytes) share GPU 0's up link at B/2 until the first ends at
  // 2m/B; the second then has 2m left at full rate: alpha + 4m/B in total.
  const double m = 1 << 20;
  const Schedule s = hand(3, 4, 2, {{{tx(0, 1, 0, 1), tx(0, 2, 1, 3)}}});
  const RunResult r = simgrid(s, config(make_nvswitch(3, kLink), 4 * m));
  expect_rel(r.finish_s[1], kAlpha + 2 * m / kB);
  expect_rel(r.finish_s[2], kAlpha + 4 * m / kB);
  expect_rel(r.finish_s[0], kAlpha + 4 * m / kB);
}

// Random multi-port schedules on a star: several flows of different sizes share GPU ports and
// start at different times, so bandwidth shares change often. Replay's max-min sharing and
// SimGrid's must agree on every finish time. (SimGrid 3.32's lazy solver update got some of
// these wrong; the engine uses the full update.)
TEST(SimGrid, RandomContentionAgreesWithReplay) {
  std::mt19937_64 rng(12345);
  const auto pick = [&rng](std::uint64_t bound) { return static_cast<std::uint32_t>(rng() % bound); };
  for (int c = 0; c < 200; ++c) {
    const Rank n = 3 + pick(4);
    const std::uint32_t chunks = 8;
    const auto rounds = test::random_rounds(rng, n, chunks, 2 + pick(3), 5);
    const Schedule s = hand(n, chunks, 8, {rounds});
    std::vector<double> arrival(n, 0.0);
    arrival[pick(n)] = 1e-6 * pick(50);
    const RunConfig cfg = config(make_nvswitch(n, kLink), 8.0 * (1 << 20), StartMode::Eager, arrival);
    const RunResult a = simgrid(s, cfg);
    const RunResult b = make_replay_engine()->run(s, cfg);
    for (Rank r = 0; r < n; ++r) expect_rel(a.finish_s[r], b.finish_s[r], 1e-9, "case " + std::to_string(c));
  }
}

TEST(SimGrid, ManyFlowsPerLinkAgreeWithReplay) {
  // Dozens of flows share each link: the solver's per-link usage sums dozens of 1/latency terms,
  // whose rounding residue a too tight maxmin precision takes for an unsaturated link.
  const Rank n = 24;
  std::vector<Transfer> round;
  for (Rank src = 0; src < n; ++src) {
    for (Rank dst = 0; dst < n; ++dst) {
      if (src != dst) round.push_back(tx(src, dst, 0, 1 + (src * 7 + dst) % 3, (src + dst) % 2 ? Op::Reduce : Op::Copy));
    }
  }
  const Schedule s = hand(n, 3, n, {{round, round}});
  std::vector<double> arrival(n, 0.0);
  for (Rank r = 0; r < n; r += 7) arrival[r] = 1e-6 * r;
  const RunConfig cfg = config(make_nvswitch(n, kLink), 3.0 * (1 << 20), StartMode::Eager, arrival);
  const RunResult a = simgrid(s, cfg);
  const RunResult b = make_replay_engine()->run(s, cfg);
  for (Rank r = 0; r < n; ++r) expect_rel(a.finish_s[r], b.finish_s[r], 1e-9, "rank " + std::to_string(r));
}

TEST(SimGrid, EventsASubNanosecondApartStayApart) {
  // Two flows share GPU 0's up link; the longer one has 135 bytes (0.3 ns at 450 GB/s) left
  // when the shorter ends. SimGrid's default date precision (1e-9 s) would end both together.
  const double c = 135;
  const Schedule s = hand(3, 2001, 2, {{{tx(0, 1, 0, 1000), tx(0, 2, 1000, 1001)}}});
  const RunResult r = simgrid(s, config(make_nvswitch(3, kLink), 2001 * c));
  expect_rel(r.finish_s[1], kAlpha + 2000 * c / kB, 1e-12);
  expect_rel(r.finish_s[2], kAlpha + 2001 * c / kB, 1e-12);
}

TEST(SimGrid, GammaIsAddedAtTheReduceReceiver) {
  const Rank n = 6;
  const double size = 1 << 26;
  const double gamma = 1.0 / 200e9;
  const double chunk = size / n;
  const Schedule s = generate_schedule("ring", AlgorithmOptions{n, {}, 0});
  const RunResult r = simgrid(s, config(make_nvswitch(n, LinkModel{kAlpha, kB, gamma}), size));
  expect_rel(r.time_s, (n - 1) * (kAlpha + chunk / kB + chunk * gamma) + (n - 1) * (kAlpha + chunk / kB));

  const Schedule one = hand(2, 1, 1, {{{tx(0, 1, 0, 1, Op::Reduce)}}});
  RunConfig c = config(make_nvswitch(2, LinkModel{kAlpha, kB, gamma}), size);
  c.record_trace = true;
  const RunResult single = simgrid(one, c);
  expect_rel(single.finish_s[0], kAlpha + size / kB);
  expect_rel(single.finish_s[1], kAlpha + size / kB + size * gamma);
  ASSERT_EQ(single.trace.size(), 1u);
  EXPECT_EQ(single.trace[0].start_s, 0.0);
  expect_rel(single.trace[0].end_s, single.finish_s[1]);
  // A copy pays no reduction cost.
  const RunResult copy = simgrid(hand(2, 1, 1, {{{tx(0, 1)}}}), c);
  expect_rel(copy.finish_s[1], kAlpha + size / kB);
}

TEST(SimGrid, TraceHasEveryTransferInScheduleOrder) {
  const Rank n = 5;
  const double size = 1 << 20;
  const Schedule s = generate_schedule("ring", AlgorithmOptions{n, {}, 0});
  RunConfig c = config(make_nvswitch(n, kLink), size);
  c.record_trace = true;
  const RunResult r = simgrid(s, c);
  ASSERT_EQ(r.trace.size(), s.num_transfers());
  const double step = kAlpha + size / n / kB;
  std::size_t i = 0;
  for (std::size_t p = 0; p < s.phases.size(); ++p) {
    for (std::size_t round = 0; round < s.phases[p].num_rounds(); ++round) {
      for (const Transfer& t : s.phases[p].round(round)) {
        const TransferRecord& rec = r.trace[i++];
        EXPECT_EQ(rec.phase, p);
        EXPECT_EQ(rec.round, round);
        EXPECT_EQ(rec.transfer.src, t.src);
        EXPECT_EQ(rec.transfer.dst, t.dst);
        EXPECT_EQ(rec.transfer.chunk_begin, t.chunk_begin);
        const double k = static_cast<double>(p * (n - 1) + round);
        expect_rel(rec.start_s + 1.0, k * step + 1.0, 1e-15);
        expect_rel(rec.end_s, (k + 1) * step);
      }
    }
  }
  EXPECT_TRUE(simgrid(s, config(make_nvswitch(n, kLink), size)).trace.empty());
}

TEST(SimGrid, RepeatedRunsInOneProcessAreIdentical) {
  const Rank n = 9;
  const Schedule s = generate_schedule("ring", AlgorithmOptions{n, {}, 0});
  std::vector<double> arrival(n, 0.0);
  arrival[4] = 17e-6;
  const RunConfig c = config(make_nvswitch(n, kLink), 3e7, StartMode::Eager, arrival);
  const auto engine = make_simgrid_engine();
  const RunResult first = engine->run(s, c);
  for (int i = 0; i < 5; ++i) {
    const RunResult again = engine->run(s, c);
    EXPECT_EQ(again.finish_s, first.finish_s);
    EXPECT_EQ(again.time_s, first.time_s);
  }
}

TEST(SimGrid, RankWithoutTransfersFinishesAtArrival) {
  const Schedule s = hand(3, 1, 1, {{{tx(0, 1)}}});
  const RunResult r = simgrid(s, config(make_nvswitch(3, kLink), 1, StartMode::Eager, {0, 0, 5e-3}));
  EXPECT_EQ(r.finish_s[2], 5e-3);
  const Schedule empty = hand(3, 1, 1, {});
  const RunResult e = simgrid(empty, config(make_nvswitch(3, kLink), 1, StartMode::Eager, {1e-3, 0, 2e-3}));
  EXPECT_EQ(e.finish_s, (std::vector<double>{1e-3, 0, 2e-3}));
  EXPECT_EQ(e.transfers, 0u);
}

TEST(SimGrid, RejectsConfigsThatDoNotFit) {
  const Schedule s = generate_schedule("ring", AlgorithmOptions{4, {}, 0});
  const Topology t = make_nvswitch(4, kLink);
  EXPECT_THROW((void)simgrid(s, config(make_nvswitch(5, kLink), 1)), ConfigError);
  EXPECT_THROW((void)simgrid(s, config(t, -1)), ConfigError);
  EXPECT_THROW((void)simgrid(s, config(t, 1, StartMode::Eager, {0, 0, 0})), ConfigError);
  EXPECT_THROW((void)simgrid(s, config(t, 1, StartMode::Eager, {0, 0, -1e-6, 0})), ConfigError);
  EXPECT_THROW((void)simgrid(s, config(t, 1, StartMode::Eager, {0, 0, std::nan(""), 0})), ConfigError);
  EXPECT_THROW((void)simgrid(hand(4, 1, 1, {{{tx(1, 1)}}}), config(t, 1)), ScheduleError);
  EXPECT_THROW((void)simgrid(hand(4, 1, 1, {{{tx(0, 4)}}}), config(t, 1)), ScheduleError);
  EXPECT_THROW((void)simgrid(hand(4, 2, 1, {{{tx(0, 1, 1, 2)}}}), config(t, 1)), ScheduleError);
}

TEST(SimGrid, ChildProcessFailuresBecomeErrors) {
  using detail::run_in_child_process;
  // A child that dies from a signal is reported, not waited on forever.
  EXPECT_THROW(run_in_child_process("test", [](int) { std::raise(SIGKILL); }, [](int fd) { (void)detail::read_value<int>(fd); }),
               InternalError);
  // A child that throws exits non-zero.
  EXPECT_THROW(run_in_child_process("test", [](int) { throw ConfigError("child"); }, [](int) {}), InternalError);
  // The parent's own exception wins when the child is healthy.
  EXPECT_THROW(run_in_child_process("test", [](int fd) { detail::write_value(fd, 7); },
                                    [](int fd) {
                                      if (detail::read_value<int>(fd) == 7) throw ScheduleError("parent");
                                    }),
               ScheduleError);
  int got = 0;
  run_in_child_process("test", [](int fd) { detail::write_value(fd, 42); }, [&](int fd) { got = detail::read_value<int>(fd); });
  EXPECT_EQ(got, 42);
}

TEST(SimGrid, OversubscribedFabricIsSlowerThanFullBisection) {
  // Every GPU sends to the matching GPU of another leaf: all flows cross the spine.
  ClusterSpec spec;
  spec.gpus_per_node = 4;
  spec.nodes_per_leaf = 1;
  const Rank n = 16;
  const Schedule s = test::shifted_exchange(n, 4);
  const double m = 1 << 26;
  const RunResult full = simgrid(s, config(make_cluster(n, spec, 0.0, "full"), m));
  spec.oversubscription = 4;
  const RunResult over = simgrid(s, config(make_cluster(n, spec, 0.0, "over"), m));
  expect_rel(full.time_s, spec.network_latency_s + m / spec.nic_bandwidth_Bps);
  // Four NICs share a leaf uplink of one NIC's capacity: each flow gets a quarter.
  expect_rel(over.time_s, spec.network_latency_s + m / (spec.nic_bandwidth_Bps / 4));
}

// Replay and simgrid implement the same semantics with independent code: they must agree on
// every schedule and topology both support, with stragglers, gamma, and both start modes.
TEST(SimGrid, AgreesWithReplay) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> delay(0.0, 100e-6);
  ClusterSpec spec;
  spec.gpus_per_node = 4;
  spec.nodes_per_leaf = 2;
  ClusterSpec over = spec;  // 2:1, rail-optimized: leaf uplinks bind and are shared
  over.nodes_per_leaf = 1;
  over.oversubscription = 2;
  over.rail_optimized = true;
  ReplayEngine replay;
  const auto sim = make_simgrid_engine();
  // Runs cycle through no launch overhead, a fused launch and a launch per round.
  const ExecutionCosts kLaunches[] = {{}, {ExecutionStyle::Fused, 7e-6}, {ExecutionStyle::P2pRounds, 5e-6}};
  std::size_t run = 0;
  for (const auto& info : all_algorithms()) {
    for (Rank n : {5u, 8u, 12u}) {
      Schedule s;
      try {
        s = generate_schedule(info.name, AlgorithmOptions{n, {}, 0});
      } catch (const ScheduleError&) {
        continue;  // n not supported by this algorithm
      }
      std::vector<Topology> topologies{test::reducing(make_nvswitch(n, LinkModel{kAlpha, kB, 1.0 / 300e9})),
                                       make_full_mesh(n, kLink), make_cluster(n, spec, 0.0, "cluster"),
                                       make_cluster(n, over, 0.0, "cluster_2to1")};
      if (n == 8) topologies.push_back(make_dgx1(8, LinkModel{2e-6, 25e9, 0.0}));
      for (const Topology& topo : topologies) {
        if (!test::fits(info, n, topo)) continue;
        for (StartMode mode : {StartMode::Eager, StartMode::Barrier}) {
          std::vector<double> arrival(n, 0.0);
          arrival[rng() % n] = delay(rng);
          arrival[rng() % n] = delay(rng);
          RunConfig c = config(topo, 3e7, mode, arrival);
          c.record_trace = true;
          c.execution = kLaunches[run++ % 3];
          const RunResult a = replay.run(s, c);
          const RunResult b = sim->run(s, c);
          const std::string what = std::string(info.name) + " n=" + std::to_string(n) + " " + topo.name + " " +
                                   start_mode_name(mode);
          expect_rel(b.time_s, a.time_s, 1e-9, what);
          for (Rank r = 0; r < n; ++r) expect_rel(b.finish_s[r], a.finish_s[r], 1e-9, what);
          ASSERT_EQ(b.trace.size(), a.trace.size()) << what;
          for (std::size_t i = 0; i < a.trace.size(); ++i) {
            expect_rel(b.trace[i].start_s + 1.0, a.trace[i].start_s + 1.0, 1e-12, what);
            expect_rel(b.trace[i].end_s, a.trace[i].end_s, 1e-9, what);
          }
        }
      }
    }
  }
}

// The replay engine's sharing on oversubscribed fabrics (only links that can bind are shared, a
// reshare per date, unchanged rates keep their dates) against SimGrid's full max-min solver:
// real algorithms at sizes where leaf uplinks are congested by dozens of flows.
TEST(SimGrid, OversubscribedClustersAgreeWithReplay) {
  ClusterSpec rails;
  rails.gpus_per_node = 4;
  rails.nodes_per_leaf = 4;
  rails.oversubscription = 2;
  rails.rail_optimized = true;
  ClusterSpec blocks;
  blocks.gpus_per_node = 8;
  blocks.nodes_per_leaf = 2;
  blocks.oversubscription = 3;
  ReplayEngine replay;
  const auto sim = make_simgrid_engine();
  for (const char* algo : {"stragglar", "ring", "recursive_halving_doubling", "double_binary_tree", "direct"}) {
    for (Rank n : {48u, 64u}) {
      const Schedule s = generate_schedule(algo, AlgorithmOptions{n, {}, 0});
      // PXN: sends to another rail share the sender's NVLink and a node peer's NIC, on 1:1 too.
      // Only at 48 GPUs: its NICs shared by identical flows make the runs sensitive to rounding
      // (a flow that ends a rounding error early gets more bandwidth in its next round), and at
      // 64 GPUs and more replay's two exact solvers already differ by 1e-8 to 6e-3 (README).
      ClusterSpec pxn = rails;
      pxn.pxn = true;
      ClusterSpec pxn_full = pxn;
      pxn_full.oversubscription = 1;
      std::vector<Topology> topologies{make_cluster(n, rails, 0.0, "rails_2to1"), make_cluster(n, blocks, 0.0, "blocks_3to1")};
      if (n == 48) {
        topologies.push_back(make_cluster(n, pxn, 0.0, "rails_2to1_pxn"));
        topologies.push_back(make_cluster(n, pxn_full, 0.0, "rails_pxn"));
      }
      for (const Topology& topo : topologies) {
        for (StartMode mode : {StartMode::Eager, StartMode::Barrier}) {
          std::vector<double> arrival(n, 0.0);
          arrival[n - 1] = 150e-6;
          arrival[n / 3] = 20e-6;
          const RunConfig c = config(topo, 64.0 * (1 << 20), mode, arrival);
          const RunResult a = replay.run(s, c);
          const RunResult b = sim->run(s, c);
          const std::string what = std::string(algo) + " n=" + std::to_string(n) + " " + topo.name + " " + start_mode_name(mode);
          for (Rank r = 0; r < n; ++r) expect_rel(b.finish_s[r], a.finish_s[r], 1e-9, what);
        }
      }
    }
  }
}

// Random multi-port schedules on small oversubscribed clusters: flows of different sizes share
// NICs and leaf links, start at different times and stop binding links as they end.
TEST(SimGrid, RandomContentionOnOversubscribedClustersAgreesWithReplay) {
  std::mt19937_64 rng(4242);
  const auto pick = [&rng](std::uint64_t bound) { return static_cast<std::uint32_t>(rng() % bound); };
  for (int c = 0; c < 120; ++c) {
    ClusterSpec spec;
    spec.gpus_per_node = 1 + pick(3);
    spec.nodes_per_leaf = 1 + pick(2);
    spec.oversubscription = 1.5 + 0.5 * pick(6);
    spec.rail_optimized = pick(2) == 1;
    const Rank n = 6 + pick(11);
    const std::uint32_t chunks = 8;
    const auto rounds = test::random_rounds(rng, n, chunks, 1 + pick(3), 2 * n + 1);
    const Schedule s = hand(n, chunks, 2 * n, {rounds});
    std::vector<double> arrival(n, 0.0);
    for (Rank r = 0; r < n; ++r) arrival[r] = pick(3) == 0 ? 1e-6 * pick(400) : 0.0;
    const RunConfig cfg = config(make_cluster(n, spec, 1.0 / 500e9, "random_over"), 8.0 * (1 << 20), StartMode::Eager, arrival);
    const RunResult a = simgrid(s, cfg);
    const RunResult b = make_replay_engine()->run(s, cfg);
    for (Rank r = 0; r < n; ++r) expect_rel(a.finish_s[r], b.finish_s[r], 1e-9, "case " + std::to_string(c));
  }
}

// Random multi-port schedules on a DGX-1: forwarded two-hop flows (half the CM02 weight of a
// direct one) share single and double NVLinks with direct flows.
TEST(SimGrid, RandomContentionOnDgx1AgreesWithReplay) {
  std::mt19937_64 rng(1618);
  const auto pick = [&rng](std::uint64_t bound) { return static_cast<std::uint32_t>(rng() % bound); };
  const Topology topo = make_dgx1(8, LinkModel{kAlpha, 25e9, 0.0});
  for (int c = 0; c < 60; ++c) {
    const auto rounds = test::random_rounds(rng, 8, 8, 1 + pick(3), 20);
    const Schedule s = hand(8, 8, 24, {rounds});
    std::vector<double> arrival(8, 0.0);
    arrival[pick(8)] = 1e-6 * pick(100);
    const RunConfig cfg = config(topo, 8.0 * (1 << 20), StartMode::Eager, arrival);
    const RunResult a = simgrid(s, cfg);
    const RunResult b = make_replay_engine()->run(s, cfg);
    for (Rank r = 0; r < 8; ++r) expect_rel(a.finish_s[r], b.finish_s[r], 1e-9, "case " + std::to_string(c));
  }
}

// More ranks than the engine has worker actors (64): several senders share a worker, workers
// hand flows to each other and ring each other's doorbells, and some sit idle until a late rank
// arrives. The results must still be replay's, transfer by transfer.
TEST(SimGrid, MoreRanksThanWorkersAgreeWithReplay) {
  const Rank n = 130;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> delay(0.0, 200e-6);
  ClusterSpec over;
  over.gpus_per_node = 4;
  over.nodes_per_leaf = 2;
  over.oversubscription = 2;
  ReplayEngine replay;
  const auto sim = make_simgrid_engine();
  for (const char* algo : {"ring", "direct"}) {
    const Schedule s = generate_schedule(algo, AlgorithmOptions{n, {}, 0});
    for (const Topology& topo : {make_nvswitch(n, LinkModel{kAlpha, kB, 1.0 / 300e9}), make_cluster(n, over, 0.0, "over")}) {
      for (StartMode mode : {StartMode::Eager, StartMode::Barrier}) {
        std::vector<double> arrival(n, 0.0);
        for (int k = 0; k < 5; ++k) arrival[rng() % n] = delay(rng);
        RunConfig c = config(topo, 1e8, mode, arrival);
        c.record_trace = true;
        const RunResult a = replay.run(s, c);
        const RunResult b = sim->run(s, c);
        const std::string what = std::string(algo) + " " + topo.name + " " + start_mode_name(mode);
        expect_rel(b.time_s, a.time_s, 1e-9, what);
        for (Rank r = 0; r < n; ++r) expect_rel(b.finish_s[r], a.finish_s[r], 1e-9, what);
        ASSERT_EQ(b.trace.size(), a.trace.size()) << what;
        for (std::size_t i = 0; i < a.trace.size(); ++i) {
          expect_rel(b.trace[i].start_s + 1.0, a.trace[i].start_s + 1.0, 1e-12, what);
          expect_rel(b.trace[i].end_s, a.trace[i].end_s, 1e-9, what);
        }
      }
    }
  }
}

// Hierarchical algorithms take their node size from the cluster; SimGrid runs them as replay
// does, on 1:1 and 2:1 fabrics, non-power-of-two node counts included.
TEST(SimGrid, HierarchicalAgreesWithReplay) {
  ClusterSpec spec;
  spec.gpus_per_node = 4;
  spec.nodes_per_leaf = 2;
  ClusterSpec over = spec;
  over.oversubscription = 2;
  ReplayEngine replay;
  const auto sim = make_simgrid_engine();
  for (const auto& info : all_algorithms()) {
    if (!info.hierarchical) continue;
    for (Rank nodes : {3u, 4u, 6u}) {
      const Rank n = nodes * spec.gpus_per_node;
      AlgorithmOptions options{n, {}, 0, spec.gpus_per_node};
      const Schedule s = generate_schedule(info.name, options);
      // Switches that reduce, for nvls_tree; the other rows do not use them.
      for (const Topology& topo :
           {test::reducing(make_cluster(n, spec, 0.0, "c")), test::reducing(make_cluster(n, over, 0.0, "c2to1"))}) {
        std::vector<double> arrival(n, 0.0);
        arrival[n / 2] = 40e-6;
        RunConfig c = config(topo, 1e8, StartMode::Barrier, arrival);
        const RunResult a = replay.run(s, c);
        const RunResult b = sim->run(s, c);
        const std::string what = std::string(info.name) + " n=" + std::to_string(n) + " " + topo.name;
        expect_rel(b.time_s, a.time_s, 1e-9, what);
        for (Rank r = 0; r < n; ++r) expect_rel(b.finish_s[r], a.finish_s[r], 1e-9, what);
      }
    }
  }
}

// The engine uses SimGrid's public s4u API only (README, "SimGrid engine"): no source of sim/
// may include kernel or simix headers, name the kernel namespace, or cast SimGrid types.
TEST(SimGrid, NoSourceTouchesSimGridInternals) {
  const std::filesystem::path dir = std::filesystem::path(COLLSIM_SOURCE_DIR) / "sim" / "src";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int scanned = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ++scanned;
    for (const char* internal : {"simgrid/kernel/", "simgrid/simix", "simgrid::kernel::", "simcall_", "reinterpret_cast"}) {
      EXPECT_EQ(text.find(internal), std::string::npos) << name << " uses " << internal;
    }
  }
  EXPECT_GT(scanned, 10);
}

#else

TEST(SimGrid, NotBuilt) { GTEST_SKIP() << "collsim was built without SimGrid"; }

#endif

}  // namespace
}  // namespace collsim
