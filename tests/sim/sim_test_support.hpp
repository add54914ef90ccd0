// Helpers shared by the engine tests: the paper's link model, run configs and hand-written
// schedules.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/algorithms/schedule.hpp"
#include "collsim/models/topology.hpp"
#include "collsim/sim/engine.hpp"

namespace collsim::test {

inline constexpr double kAlpha = 3e-6;
inline constexpr double kB = 450e9;
inline const LinkModel kLink{kAlpha, kB, 0.0};

// |actual - expected| within `tol` relative to expected; `what` names the case on failure.
inline void expect_rel(double actual, double expected, const std::string& what = "", double tol = 1e-9) {
  EXPECT_LE(std::fabs(actual - expected), tol * std::fabs(expected)) << actual << " vs " << expected << " " << what;
}

inline RunConfig config(const Topology& topo, double size, StartMode start = StartMode::Eager,
                        std::vector<double> arrival = {}) {
  RunConfig c;
  c.size_bytes = size;
  c.topology = topo;
  c.start = start;
  c.arrival_s = std::move(arrival);
  return c;
}

// `topology` with a switch that reduces in the network, so that tests looping over every row
// run nvls on it too (other rows do not care).
inline Topology reducing(Topology topology) {
  topology.switch_reduction = true;
  return topology;
}

// False for a row that needs what `topology` lacks (nvls: a switch that reduces, one node).
inline bool fits(const AlgorithmInfo& info, Rank n, const Topology& topology) {
  return !info.needs_switch_reduction || info.unsupported_reason(n, topology_context(topology)).empty();
}

// A schedule written by hand: one phase per entry of `phases`, one round per inner entry.
inline Schedule hand(Rank n, std::uint32_t chunks, std::uint32_t ports,
                     const std::vector<std::vector<std::vector<Transfer>>>& phases) {
  Schedule s;
  s.algorithm = "hand";
  s.n = n;
  s.num_chunks = chunks;
  s.ports = ports;
  int index = 0;
  for (const auto& rounds : phases) {
    Phase& p = s.add_phase("phase" + std::to_string(index++));
    for (const auto& round : rounds) {
      p.begin_round();
      for (const Transfer& t : round) p.add(t.src, t.dst, t.chunk_begin, t.chunk_count, t.op);
    }
  }
  return s;
}

inline Transfer tx(Rank src, Rank dst, std::uint32_t chunk = 0, std::uint32_t count = 1, Op op = Op::Copy) {
  return Transfer{src, dst, chunk, static_cast<std::uint16_t>(count), op};
}

// Random rounds of transfers between n ranks: `num_rounds` rounds of 1..max_per_round transfers
// with random endpoints, chunk ranges of 1-4 of `chunks` chunks, copy or reduce.
inline std::vector<std::vector<Transfer>> random_rounds(std::mt19937_64& rng, Rank n, std::uint32_t chunks,
                                                        std::uint32_t num_rounds, std::uint32_t max_per_round) {
  const auto pick = [&rng](std::uint64_t bound) { return static_cast<std::uint32_t>(rng() % bound); };
  std::vector<std::vector<Transfer>> rounds(num_rounds);
  for (auto& round : rounds) {
    const std::uint32_t k = 1 + pick(max_per_round);
    for (std::uint32_t i = 0; i < k; ++i) {
      const Rank src = pick(n);
      Rank dst = pick(n - 1);
      if (dst >= src) ++dst;
      const std::uint32_t count = 1 + pick(4);
      round.push_back(tx(src, dst, pick(chunks - count + 1), count, pick(2) ? Op::Reduce : Op::Copy));
    }
  }
  return rounds;
}

// A topology whose links are shared: dgx1 (routes of one and two hops, 3 us or no latency) when
// `dgx1`, else a random oversubscribed cluster of min_nodes .. min_nodes + node_choices - 1 nodes
// (1-4 GPUs per node, 1-3 nodes per leaf, 1.5:1 to 4.5:1, rail-optimized or not).
inline Topology random_shared_topology(std::mt19937_64& rng, bool dgx1, Rank min_nodes, Rank node_choices) {
  const auto pick = [&rng](std::uint64_t bound) { return static_cast<std::uint32_t>(rng() % bound); };
  if (dgx1) return make_dgx1(8, LinkModel{pick(2) ? 3e-6 : 0.0, 25e9, 0.0});
  ClusterSpec spec;
  spec.gpus_per_node = 1 + pick(4);
  spec.nodes_per_leaf = 1 + pick(3);
  spec.oversubscription = 1.5 + pick(4);
  spec.rail_optimized = pick(2) == 1;
  return make_cluster(min_nodes + pick(node_choices), spec, 0.0, "random_over");
}

// One round in which GPU g sends one chunk to GPU (g + shift) mod n: with `shift` GPUs per leaf,
// every flow crosses the spine.
inline Schedule shifted_exchange(Rank n, Rank shift) {
  std::vector<Transfer> round;
  for (Rank g = 0; g < n; ++g) round.push_back(tx(g, (g + shift) % n));
  return hand(n, 1, 1, {{round}});
}

}  // namespace collsim::test
