// Result files of a study and the text summary printed after a run.
//
// results.csv (one row per point and trial, in point order then trial order; simulated
// quantities only, so the same seed gives the same bytes):
//   algorithm,n,size_bytes,topology,engine,start,delay_s,trial,seed,time_s,
//   time_after_last_arrival_s,speedup_vs_ring,arrival,straggler,straggler_moved,algbw_GBps,
//   busbw_GBps,hidden_delay_fraction,transfers
// summary.csv (one row per point):
//   point,algorithm,n,size_bytes,topology,engine,start,arrival,trials,mean_delay_s,mean_time_s,
//   p50_time_s,p99_time_s,min_time_s,max_time_s,mean_time_after_last_arrival_s,
//   p99_time_after_last_arrival_s,mean_speedup_vs_ring,speedup_of_mean_vs_ring,rank_by_mean
// timing.csv (one row per point; measured, so it differs between runs):
//   point,algorithm,n,size_bytes,topology,engine,start,arrival,trials,wall_s,generate_s,
//   transfers,transfers_per_s,peak_rss_bytes,resumed
// An empty field means "not defined" (e.g. hidden_delay_fraction without a delay).
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/experiments/runner.hpp"
#include "collsim/experiments/sweep.hpp"

namespace collsim {

struct SampleStats {
  std::size_t count = 0;
  double mean = 0, p50 = 0, p99 = 0, min = 0, max = 0;
};

/// Nearest-rank percentile: the smallest sample x such that at least p % of the samples are
/// <= x, i.e. sorted[ceil(p / 100 * N) - 1] (p = 0 gives the minimum). Always one of the samples,
/// so it is reproducible and needs no interpolation convention. Precondition: values non-empty,
/// 0 <= p <= 100 (throws InternalError otherwise).
double percentile(std::span<const double> values, double p);

/// Mean (computed as min + mean(x - min), so equal samples give exactly that value), p50, p99,
/// min, max. Precondition: values non-empty (throws InternalError).
SampleStats summarize(std::span<const double> values);

/// Per point and trial: the baseline's time_s at the same point and trial divided by this time_s
/// (NaN when undefined). Indexed like StudyResult::points[p].trials.
std::vector<std::vector<double>> speedups_vs_baseline(const SweepGrid& grid, const StudyResult& result);

std::string results_csv(const SweepGrid& grid, const StudyResult& result);
std::string summary_csv(const SweepGrid& grid, const StudyResult& result);
std::string timing_csv(const SweepGrid& grid, const StudyResult& result);

/// Writes results.csv, summary.csv, timing.csv and config.resolved.yaml into `dir` (created if
/// missing). Every file is complete in memory before the first is written, and each is written
/// atomically (temporary file + rename). Throws ConfigError naming the path on I/O failure.
void write_study_outputs(const std::filesystem::path& dir, const SweepGrid& grid, const StudyResult& result);

/// Throws ConfigError naming `command`, `option` and `dir` when a file a run writes in `dir` is in
/// the way: one of the result files write_study_outputs replaces is a directory, or the
/// checkpoint journal (checkpoint_path) is anything but a regular file (a directory, FIFO, device
/// or symbolic link: opened, a FIFO waits for a writer forever and /dev/zero reads until memory
/// runs out). Made before the study runs, not after it.
void check_study_output_files(const std::filesystem::path& dir, std::string_view command, std::string_view option);

/// Removes temporary files a killed writer may have left in `dir` ("<file>.tmp.<pid>" of our
/// result files).
void remove_stale_temporaries(const std::filesystem::path& dir);

/// The text printed after a run: per scenario (point without its algorithm), the best algorithm
/// by mean time, its p99 and its speedup over ring, then the runner-up. At most `max_scenarios`
/// lines; the rest is counted.
std::string text_summary(const SweepGrid& grid, const StudyResult& result, std::size_t max_scenarios = 20);

}  // namespace collsim
