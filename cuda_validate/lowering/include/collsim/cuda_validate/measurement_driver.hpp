// The measurement loop of collsim-cuda: configurations x warm-up and measured iterations, result
// validation and CSV rows. It talks to the devices only through MeasurementBackend, so the loop
// itself is tested on the CPU (with a host backend) and the GPU code only executes one run.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "collsim/cuda_validate/lowering.hpp"
#include "collsim/cuda_validate/run_options.hpp"

namespace collsim::cuda_validate {

/// Identification of the hardware, copied into every CSV row.
struct DeviceInfo {
  std::string device;          ///< e.g. "NVIDIA H100 80GB HBM3"
  std::string driver_version;  ///< e.g. "13.0"
  std::string nccl_version;    ///< e.g. "2.28.9"
};

/// Outcome of one timed run.
struct IterationResult {
  double time_s = 0.0;          ///< first start to last finish, seconds
  std::size_t mismatches = 0;   ///< elements that failed validation, over all GPUs
  std::string first_mismatch;   ///< description of the first one
};

/// One timed, validated run on some hardware. Every call initialises the buffers with
/// input_value data first, so runs are independent. `gated`: the GPUs are held until the host
/// has enqueued the whole run (RunOptions::launch). Implementations throw CudaError (or any
/// collsim::Error) on failure; a wrong result is reported through IterationResult, not thrown.
class MeasurementBackend {
 public:
  virtual ~MeasurementBackend() = default;
  virtual DeviceInfo device_info() = 0;
  /// Runs a lowered schedule; rank `straggler` starts `delay_s` late.
  virtual IterationResult run_schedule(const LoweredSchedule& lowered, Rank straggler, double delay_s, bool gated) = 0;
  /// Native in-place AllReduce (sum) of `count` floats on ranks 0..n-1.
  virtual IterationResult run_nccl_allreduce(Rank n, std::size_t count, Rank straggler, double delay_s,
                                             bool gated) = 0;
  /// One message of `count` floats from rank 0 to rank 1.
  virtual IterationResult run_p2p(std::size_t count, bool gated) = 0;
  /// The reduction kernel dst += src over `count` floats on rank 0.
  virtual IterationResult run_reduce_kernel(std::size_t count, bool gated) = 0;
  /// In-place ReduceScatter of `count` floats (a multiple of ranks.size()) among `ranks` (>= 2).
  virtual IterationResult run_reduce_scatter(const std::vector<Rank>& ranks, std::size_t count, bool gated) = 0;
  /// The timing frame (start event, cross-GPU waits, join event) around nothing, on `ranks`.
  virtual IterationResult run_empty(const std::vector<Rank>& ranks, bool gated) = 0;
};

/// What a measurement session produced.
struct DriverSummary {
  std::size_t rows = 0;                ///< CSV rows written
  std::size_t configurations = 0;      ///< configurations attempted
  std::vector<std::string> failures;   ///< one line per configuration that failed validation
  /// Configurations not run, with the reason: sizes too small for a configuration, a
  /// ReduceScatter micro-benchmark with fewer than 2 ready ranks (not an error).
  std::vector<std::string> skipped;
  bool ok() const { return failures.empty(); }
};

/// The lowering options collsim-cuda uses for `schedule`: with --phase1 nccl, a schedule that
/// has_ready_reduce_scatter runs that phase as one ncclReduceScatter.
LoweringOptions lowering_options_for(const RunOptions& options, const Schedule& schedule, std::size_t count);

/// Elements used for `size_bytes`: size_bytes / 4, rounded down to a multiple of `multiple`.
/// Throws ConfigError if that leaves no element.
std::size_t element_count(std::uint64_t size_bytes, std::size_t multiple, std::string_view what);

/// Generates and lowers every registry schedule of `options` once, so an unsupported n or
/// straggler is reported before any device work, then checks NCCL_ALGO against the NCCL
/// collectives the run will issue (check_nccl_algo). Throws ScheduleError / ConfigError.
void check_schedules(const RunOptions& options);

/// Runs every configuration of `options` on `backend`: for each algorithm, size and delay,
/// `warmup` then `iters` runs; then each micro-benchmark over the sizes. AllReduce rows go to
/// `csv`, micro-benchmark rows to `micro_csv` (each gets the header when it gets rows; either may
/// be null when options has nothing for it, else InternalError). For a configuration whose every
/// run validated its measured rows are written; a progress line per configuration goes to `log`.
/// A size too small for a configuration (fewer floats than the ranks or chunks it is cut into),
/// and the reduce_scatter micro-benchmark with fewer than 2 ready ranks, are skipped with a line
/// on `log` and in the summary. A configuration with a wrong result stops at that run, is
/// reported on `log` and in the summary, and writes no rows. Backend errors propagate.
DriverSummary run_measurements(const RunOptions& options, MeasurementBackend& backend, std::ostream* csv,
                               std::ostream* micro_csv, std::ostream& log);

}  // namespace collsim::cuda_validate
