#include "collsim/sim/run_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "collsim/models/error.hpp"

namespace collsim {

std::vector<double> checked_arrivals(const Schedule& schedule, const RunConfig& config) {
  if (schedule.n == 0) throw ConfigError(fmt::format("schedule '{}' has no ranks", schedule.algorithm));
  if (schedule.num_chunks == 0) throw ConfigError(fmt::format("schedule '{}' has 0 chunks", schedule.algorithm));
  if (!(config.execution.launch_s >= 0) || !std::isfinite(config.execution.launch_s)) {
    throw ConfigError(fmt::format("launch overhead {} s must be >= 0 and finite", config.execution.launch_s));
  }
  const Topology& topo = config.topology;
  if (topo.n != schedule.n) {
    throw ConfigError(fmt::format("topology '{}' has {} GPUs but the {} schedule has {} ranks", topo.name, topo.n,
                                  schedule.algorithm, schedule.n));
  }
  topo.check();
  if (schedule.num_switch_ranks > 0 && !topo.switch_reduction) {
    throw ConfigError(fmt::format("the {} schedule reduces in the NVSwitch, but the switch of topology '{}' cannot "
                                  "(its file does not set 'switch_reduction: true')", schedule.algorithm, topo.name));
  }
  if (!(config.size_bytes >= 0) || !std::isfinite(config.size_bytes)) {
    throw ConfigError(fmt::format("size {} bytes must be >= 0 and finite", config.size_bytes));
  }
  if (config.arrival_s.empty()) return std::vector<double>(schedule.n, 0.0);
  if (config.arrival_s.size() != schedule.n) {
    throw ConfigError(fmt::format("{} arrival times given for {} ranks", config.arrival_s.size(), schedule.n));
  }
  for (std::size_t r = 0; r < config.arrival_s.size(); ++r) {
    const double a = config.arrival_s[r];
    if (!(a >= 0) || !std::isfinite(a)) {
      throw ConfigError(fmt::format("arrival time of rank {} is {} s; it must be >= 0 and finite", r, a));
    }
  }
  return config.arrival_s;
}

std::vector<double> phase_gates(const Schedule& schedule, std::span<const double> arrival_s, StartMode start) {
  std::vector<double> gates(schedule.phases.size(), 0.0);
  if (start == StartMode::Eager) return gates;
  for (std::size_t p = 0; p < schedule.phases.size(); ++p) {
    for (Rank r : participants(schedule.phases[p], schedule.n)) gates[p] = std::max(gates[p], arrival_s[r]);
  }
  return gates;
}

void check_transfer(const Schedule& schedule, const Transfer& t, std::size_t phase, std::size_t round) {
  if (t.src >= schedule.num_ranks() || t.dst >= schedule.num_ranks() || t.src == t.dst ||
      static_cast<std::uint64_t>(t.chunk_begin) + t.chunk_count > schedule.num_chunks) {
    throw ScheduleError(fmt::format(
        "{} schedule, phase '{}' round {}: transfer {} -> {} of chunks [{}, {}) is malformed (n = {}, {} chunks)",
        schedule.algorithm, schedule.phases[phase].name(), round, t.src, t.dst, t.chunk_begin,
        static_cast<std::uint64_t>(t.chunk_begin) + t.chunk_count, schedule.n, schedule.num_chunks));
  }
}

void summarize_run(RunResult& result, std::span<const double> arrival_s) {
  if (arrival_s.empty()) return;
  result.first_arrival_s = *std::min_element(arrival_s.begin(), arrival_s.end());
  result.last_arrival_s = *std::max_element(arrival_s.begin(), arrival_s.end());
  double last_finish = result.last_arrival_s;
  for (double f : result.finish_s) last_finish = std::max(last_finish, f);
  result.time_s = last_finish - result.first_arrival_s;
  result.time_after_last_arrival_s = last_finish - result.last_arrival_s;
}

}  // namespace collsim
