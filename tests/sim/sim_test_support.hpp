// Helpers shared by the engine tests: the paper's link model, run configs and hand-written
// schedules.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/sim/engine.hpp"

namespace collsim::test {

inline constexpr double kAlpha = 3e-6;
inline constexpr double kB = 450e9;
inline const LinkModel kLink{kAlpha, kB, 0.0};

inline RunConfig config(const Topology& topo, double size, StartMode start = StartMode::Eager,
                        std::vector<double> arrival = {}) {
  RunConfig c;
  c.size_bytes = size;
  c.topology = topo;
  c.start = start;
  c.arrival_s = std::move(arrival);
  return c;
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

}  // namespace collsim::test
