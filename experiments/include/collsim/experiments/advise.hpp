// `collsim advise`: which AllReduce to use for a given topology, size and arrival model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collsim/experiments/output.hpp"
#include "collsim/experiments/progress.hpp"
#include "collsim/experiments/runner.hpp"
#include "collsim/experiments/spec.hpp"
#include "collsim/experiments/study_plan.hpp"

namespace collsim {

/// What to advise on. Start from an ExperimentSpec so that `--spec FILE` and flags share one
/// representation: exactly one n, size, topology, engine, start and arrival model are used.
struct AdviseRequest {
  ExperimentSpec spec;       ///< algorithms empty = every algorithm that supports n
  /// Refuse (ConfigError) when the largest run is estimated (plan_study's max_run_bytes) to need
  /// more memory than this (run_memory_limit); bytes 0 = no limit.
  RunMemoryLimit memory_limit;
  /// Reports the ranking's runs (advise_command: a bar when stderr is a terminal), but only when
  /// plan_study estimates them at `progress_min_cpu_s` of CPU or more: a long trace or a large n
  /// ran for minutes without a sign of life, and a quick answer needs no bar.
  ProgressSink* progress = nullptr;
  double progress_min_cpu_s = 2.0;
};

struct AdviseEntry {
  std::string algorithm;
  SampleStats time;                 ///< completion time over the trials, seconds
  double speedup_vs_ring = 0;       ///< ring mean / this mean
  std::size_t rank_by_p99 = 0;      ///< 1 = lowest p99; tied p99s share a rank
  std::size_t rank_by_mean = 0;     ///< 1 = lowest mean; tied means share a rank
};

/// A studied algorithm that beats the best baseline by less than this (relative) is recommended
/// with a note that the baseline does as well: the model's error against measurements is larger
/// (README, "Calibration").
inline constexpr double kSmallMargin = 0.01;

/// Two times within this relative distance are a tie: engines agree to ~1e-12, so a smaller
/// difference is rounding, and "X beats Y" or "1.00x faster" drawn from it would be false.
inline constexpr double kAdviseTieRelative = 1e-9;
bool advise_ties(double a_s, double b_s);

struct AdviseResult {
  ExperimentSpec spec;               ///< the validated single-point study that ran
  std::vector<AdviseEntry> ranking;  ///< by mean time, fastest first
  std::string best;                  ///< fastest by mean (first of tied_best)
  std::vector<std::string> tied_best;  ///< every algorithm whose mean ties the fastest, in ranking order
  std::string best_by_p99;
  std::string best_baseline;         ///< fastest by mean among the baselines (AlgorithmRole::Baseline)
  /// Fastest by mean among the studied algorithms (AlgorithmRole::Studied: stragglar); empty
  /// when the request lists none.
  std::string studied;
  double mean_delay_s = 0;           ///< mean straggler delay over the trials
  /// The constant delay of one straggler (rank n-1) above which `studied` beats best_baseline
  /// (faster by more than a tie), found by bisection with the same engine; nullopt when nothing
  /// is compared or `studied` does not win below `critical_search_limit_s`.
  std::optional<double> critical_delay_s;
  double critical_search_limit_s = 0;
  bool studied_compared = false;     ///< both `studied` and best_baseline exist
  std::string recommendation;        ///< one sentence
};

/// Runs the single-point study and the critical-delay bisection. Throws ConfigError when the
/// request does not describe exactly one point or is invalid (as validate()), and what engines
/// and schedules throw.
AdviseResult advise(AdviseRequest request, const EngineFactory& engines = {});

/// Human-readable report: the table, the critical delay, the recommendation.
std::string advise_text(const AdviseResult& result);
/// One JSON object: {topology, n, size_bytes, engine, start, arrival, trials, seed, mean_delay_s,
/// ranking: [{algorithm, mean_time_s, p50_time_s, p99_time_s, speedup_vs_ring, rank_by_mean,
/// rank_by_p99}], best, tied_best, best_by_p99, best_baseline, studied (the studied algorithm
/// critical_delay_s is for; null if none ran), critical_delay_s (null if none), critical_search_limit_s,
/// recommendation}.
std::string advise_json(const AdviseResult& result);

}  // namespace collsim
