// Estimates of what a command will cost before it starts, so that a mistyped -n or trials count
// is refused (or at least announced) instead of growing to gigabytes or running for days.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/topology.hpp"
#include "collsim/sim/engine.hpp"

namespace collsim {

/// Default ceiling on the estimated memory of one schedule (`simulate --max-schedule-memory`).
inline constexpr double kDefaultScheduleMemoryLimit_bytes = 4.0 * 1024 * 1024 * 1024;
/// Memory a run holds per rank before any schedule, at least: its topology links and their
/// names, its arrival and finish times (measured: 170 B per GPU at n = 3,000,000 on nvswitch).
/// simulate refuses an n whose ranks alone pass --max-schedule-memory before building them.
inline constexpr double kRunBytesPerRank = 160;

/// Rough CPU cost of simulating one transfer, per engine, measured on this project's reference
/// machine on an uncongested NVSwitch (schedule generation included). Congested fabrics cost more.
double cpu_s_per_transfer(std::string_view engine);
/// Rough fixed CPU cost of one run (arrivals, bookkeeping, result rows), seconds.
inline constexpr double kCpuPerRun_s = 1e-5;

/// What sizes a schedule and the engines' index of it.
struct ScheduleEstimate {
  double transfers = 0;
  double rank_rounds = 0;        ///< (rank, round) pairs in which the rank has a transfer
  double listed_transfers = 0;   ///< transfer endpoints in rank-rounds with three or more
  /// Some rank sends or receives more than once in one round (at n <= 512, or at 256 or 512):
  /// the replay engine then takes its event path even on a fabric owned by its endpoints.
  bool shares_ports = false;
};

/// The shape of `algorithm`'s schedule for `options`: counted exactly when options.n <= 512
/// (the schedule is generated), else each count extrapolated by the power law through the
/// schedules at n = 256 and 512. A pipeline deeper than 1,024 chunks is extrapolated the same
/// way from depths 512 and 1,024. nullopt when the algorithm does not support those n.
std::optional<ScheduleEstimate> estimate_schedule(std::string_view algorithm, const AlgorithmOptions& options);
/// estimate_schedule's transfers.
std::optional<double> estimate_transfers(std::string_view algorithm, const AlgorithmOptions& options);

/// Memory of a schedule with `transfers` transfers (the Transfer records; rounds are small).
double schedule_bytes(double transfers);
/// Memory of a run of a schedule so estimated with `engine` on `topology`: the schedule, and the
/// event-driven index of it where the engine may build one (Engine::builds_event_index).
double run_bytes(const ScheduleEstimate& estimate, const Engine& engine, const Topology& topology);
/// The same, saying whether the index is counted.
double run_bytes(const ScheduleEstimate& estimate, bool event_index);

/// This machine's physical memory, bytes (0 when the system does not say).
double physical_memory_bytes();

/// `bytes` with a unit a person reads at a glance ("8.1 GiB"): estimates are rough.
std::string rough_size(double bytes);

/// The value `text` of the memory cap `option` (--max-schedule-memory, --max-run-memory), bytes.
/// Throws ConfigError naming the option and value unless it is positive and, when
/// `physical_bytes` (the machine's memory) is known (> 0), at most that: a larger cap lets a run
/// through that the kernel's OOM killer then ends.
double memory_cap_bytes(const std::string& text, std::string_view option, double physical_bytes);
/// The value of --max-schedule-memory (`text`), bytes, by memory_cap_bytes against this machine's
/// memory when the user `given` it; the default (4 GiB) is not held against a smaller machine.
double memory_limit_option_bytes(const std::string& text, bool given);
/// " with --pipeline-chunks K" when `algorithm` is pipelined and K > 0, else "": what a memory
/// error names beside -n (rows without a pipeline ignore the depth).
std::string depth_clause(std::string_view algorithm, std::uint32_t pipeline_chunks);

/// Bytes of the checkpoint journal of a study with `units` work units and `runs` trials.
double journal_bytes(double units, double runs);

}  // namespace collsim
