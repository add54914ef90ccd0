// The sweep runner: executes every point x trial of a study with the engines, caching schedules,
// topologies and engines per process, checkpointing finished work, and spreading it over MPI
// ranks when there are several.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "collsim/experiments/mpi_split.hpp"
#include "collsim/experiments/progress.hpp"
#include "collsim/experiments/spec.hpp"
#include "collsim/experiments/sweep.hpp"
#include "collsim/models/error.hpp"
#include "collsim/sim/engine.hpp"

namespace collsim {

/// The simulated outcome of one trial (deterministic: a function of spec, point and trial).
struct TrialResult {
  double delay_s = 0;                    ///< last arrival - first arrival
  double time_s = 0;                     ///< first arrival to last finish
  double time_after_last_arrival_s = 0;  ///< last arrival to last finish
  std::uint32_t straggler = 0;           ///< the latest-arriving rank (lowest on a tie)
  bool straggler_moved = false;          ///< a straggler was not where the schedule expected it
  std::uint64_t transfers = 0;           ///< transfers simulated
};

/// The result of one work unit, as sent to the root and stored in the checkpoint.
struct UnitResult {
  std::size_t unit = 0;
  std::size_t point = 0;
  std::uint32_t trial_begin = 0;
  std::uint32_t trial_end = 0;
  /// The same algorithm with every rank at 0 (for hidden_delay_fraction); NaN when no trial of
  /// the unit had a delay, so it was not needed.
  double time_no_delay_s = 0;
  std::vector<TrialResult> trials;
  // Measured, not simulated (timing.csv only):
  double wall_s = 0;          ///< engine runs of this unit
  double generate_s = 0;      ///< schedule generation this unit caused (cache misses)
  double peak_rss_bytes = 0;  ///< of the process that ran the unit, when it finished
  bool resumed = false;       ///< read from a checkpoint rather than simulated in this run
};

/// All trials of one point, in trial order.
struct PointResult {
  bool active = false;        ///< false for points skipped as unsupported
  std::vector<TrialResult> trials;
  double time_no_delay_s = 0; ///< NaN when no trial had a delay
  double wall_s = 0, generate_s = 0, peak_rss_bytes = 0;
  std::uint64_t transfers = 0;
  bool resumed = false;       ///< every unit came from the checkpoint
};

struct StudyResult {
  /// True on the process that holds every result (the root); other MPI ranks get false and no
  /// points.
  bool complete = false;
  std::vector<PointResult> points;  ///< by point index
  std::size_t units_total = 0, units_resumed = 0;
  /// The checkpoint in the output directory was of another study or build, so nothing of it was
  /// resumed and it is being replaced.
  bool checkpoint_discarded = false;
  double wall_s = 0;                ///< this run, whole runner
  int processes = 1;
};

using EngineFactory = std::function<std::unique_ptr<Engine>(std::string_view name)>;

struct RunnerOptions {
  /// Directory of the checkpoint file; empty = no checkpoint (nothing resumed, nothing saved).
  std::filesystem::path checkpoint_dir;
  /// Progress reporting on the root; null = silent.
  ProgressSink* progress = nullptr;
  /// Engines by name; empty = make_engine.
  EngineFactory engine_factory;
  /// Work split over processes; null = single process.
  WorkSplit* split = nullptr;
  /// Schedules kept in memory per process, in bytes (least recently used evicted first).
  std::size_t schedule_cache_bytes = std::size_t{1536} << 20;
};

/// The checkpoint file in `dir`.
std::filesystem::path checkpoint_path(const std::filesystem::path& dir);

/// Runs every unit of `grid` not already in the checkpoint. Throws ConfigError/ScheduleError
/// from engines, schedules and topologies (on MPI, an error on any rank is rethrown on the
/// root naming that rank), Error for checkpoint I/O, and whatever `progress` throws.
StudyResult run_study(const SweepGrid& grid, const RunnerOptions& options);

}  // namespace collsim
