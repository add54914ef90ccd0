// Checks and bookkeeping shared by every engine, so that all of them reject the same bad input
// with the same message and fill RunResult's summary fields the same way.
#pragma once

#include <span>
#include <vector>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/sim/engine.hpp"

namespace collsim {

/// Validates `config` against `schedule` and returns the arrival time of every rank (seconds):
/// config.arrival_s, or all 0 when it is empty. Throws ConfigError when topology.n !=
/// schedule.n, the topology is inconsistent (Topology::check), arrival_s has a size other than
/// n or an entry that is negative or not finite, size_bytes is negative or not finite, or the
/// schedule has no ranks or no chunks.
std::vector<double> checked_arrivals(const Schedule& schedule, const RunConfig& config);

/// Earliest time each phase may start on any rank: 0 in eager mode; in barrier mode the latest
/// arrival among the ranks that take part in the phase (seconds, one entry per phase).
std::vector<double> phase_gates(const Schedule& schedule, std::span<const double> arrival_s, StartMode start);

/// Throws ScheduleError naming the phase, round and transfer when `t` has a rank >= n,
/// src == dst, or a chunk range outside [0, num_chunks).
void check_transfer(const Schedule& schedule, const Transfer& t, std::size_t phase, std::size_t round);

/// Fills first/last arrival, time_s and time_after_last_arrival_s from result.finish_s.
void summarize_run(RunResult& result, std::span<const double> arrival_s);

}  // namespace collsim
