// Command line of collsim-cuda, parsed in plain C++ so it is tested without a GPU.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/algorithms/schedule.hpp"

namespace collsim::cuda_validate {

/// --algo name of the native baseline (ncclAllReduce); every other name comes from the registry.
inline constexpr std::string_view kNcclAllReduceName = "nccl";

/// Largest delay accepted by --delays; a bigger value is almost surely a missing unit.
inline constexpr double kMaxDelay_s = 10.0;

/// How StragglAR's phase 1 (the ReduceScatter among the ready ranks) runs on the GPUs.
enum class Phase1Mode : std::uint8_t {
  Nccl,      ///< one in-place ncclReduceScatter on a communicator of the ready ranks
  Schedule,  ///< the schedule's own ring rounds (ncclSend/ncclRecv + reduction kernel)
};

/// The micro-benchmarks that measure the model's parameters.
enum class MicroBenchmark : std::uint8_t {
  P2p,            ///< GPU 0 -> GPU 1 ncclSend/ncclRecv over sizes (alpha, beta); CSV name "p2p"
  Reduce,         ///< reduction kernel dst += src on GPU 0 (gamma); CSV name "reduce_kernel"
  ReduceScatter,  ///< ncclReduceScatter among the n-1 ready ranks; CSV name "reduce_scatter_nccl"
  Empty,          ///< the timing frame with nothing inside, per participant count 1..n;
                  ///< CSV name "empty_timed_run" (its cost is in every time_s: subtract it)
};

/// Whether the GPUs are held until the host has enqueued a whole run.
enum class LaunchMode : std::uint8_t {
  Gated,    ///< held: time_s is device time only (default)
  Ungated,  ///< not held: time_s includes the host's enqueue (one ncclGroupEnd per round, kernels)
  Both,     ///< every iteration twice, gated then ungated, each row labelled
};

/// The CSV label of one run's launch: "gated" or "ungated".
std::string_view launch_name(bool gated);

/// The name of a micro-benchmark in the CSV's algorithm column.
std::string_view micro_benchmark_name(MicroBenchmark micro);

/// Everything collsim-cuda needs to run.
struct RunOptions {
  std::vector<std::string> algorithms;     ///< registry names or "nccl", in the order given
  Rank gpus = 8;                           ///< devices 0..gpus-1, 2..8
  std::vector<std::uint64_t> sizes_bytes;  ///< AllReduce buffer sizes, multiples of 4 bytes
  std::vector<double> delays_s;            ///< injected straggler delays, 0..kMaxDelay_s
  Rank straggler = 7;                      ///< delayed rank, 0..gpus-1 (default gpus-1)
  std::uint32_t iters = 20;                ///< measured iterations per configuration, >= 1
  std::uint32_t warmup = 5;                ///< unmeasured iterations before them
  Phase1Mode phase1 = Phase1Mode::Nccl;
  std::vector<MicroBenchmark> micro;       ///< micro-benchmarks to run (empty = none)
  std::string out = "measurements.csv";    ///< AllReduce CSV path; "-" = standard output
  /// Micro-benchmark CSV path; "-" = standard output. A separate file because its rows are not
  /// AllReduce measurements (`collsim calibrate` reads the AllReduce file). Default: `out` with
  /// "_micro" before ".csv" (measurements_micro.csv).
  std::string micro_out;
  /// A run not finished this long after its injected delay counts as hung (exit 5).
  double timeout_s = 60.0;
  LaunchMode launch = LaunchMode::Gated;   ///< --launch (--gate / --no-gate are shorthands)
  /// NCCL_ALGO / NCCL_PROTO of the environment ("" when unset): recorded in every row; not
  /// parsed from the command line (main fills them in).
  std::string nccl_algo;
  std::string nccl_proto;
  bool help = false;                       ///< --help was given; nothing else is meaningful
};

/// Parses the arguments after the program name. Accepts "--flag value" and "--flag=value".
/// Throws ConfigError naming the flag and the value for: an unknown flag, a missing value, an
/// unknown algorithm (listing the known ones) or micro-benchmark, a malformed or non-positive
/// size or one that is not a multiple of 4 bytes, a bad size range, a malformed, negative or too
/// large delay, --gpus outside 2..8, --straggler outside 0..gpus-1, --iters 0, a bad --phase1,
/// a run with nothing to do, and both CSVs on standard output.
RunOptions parse_run_options(std::span<const std::string> args);

/// Parses a size list: comma-separated items, each a size ("64MiB") or a range "LO..HI" that
/// multiplies by 2 (or "LO..HI:F" by the integer F >= 2) from LO while <= HI.
/// Throws ConfigError as described for parse_run_options.
std::vector<std::uint64_t> parse_size_list(std::string_view text);

/// NCCL_ALGO applies to every NCCL collective of the process. A global value (no ':'), such as
/// "Tree", also reaches the ncclReduceScatter of StragglAR's phase 1 (--phase1 nccl) and of the
/// reduce_scatter micro-benchmark: NCCL has no Tree ReduceScatter (ncclGroupEnd fails), and
/// "Ring" silently changes StragglAR's phase 1 too. Throws ConfigError naming NCCL_ALGO when
/// options.nccl_algo is global and `uses_reduce_scatter` (the run issues an ncclReduceScatter);
/// the per-collective form ("allreduce:tree", NCCL >= 2.24) is accepted.
void check_nccl_algo(const RunOptions& options, bool uses_reduce_scatter);

/// Throws ConfigError if options.nccl_algo uses the per-collective form and `nccl_version`
/// ("2.23.4") is older than 2.24, which does not understand it. An unparsable version passes.
void check_nccl_algo_version(const RunOptions& options, std::string_view nccl_version);

/// Parses a comma-separated list of durations ("0,1ms,5ms"). Throws ConfigError.
std::vector<double> parse_delay_list(std::string_view text);

/// The --help text.
std::string run_options_usage();

}  // namespace collsim::cuda_validate
