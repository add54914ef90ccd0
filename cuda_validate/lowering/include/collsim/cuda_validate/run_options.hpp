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
};

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
  bool gate = false;                       ///< hold the GPUs until the host enqueued a whole run
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

/// Parses a comma-separated list of durations ("0,1ms,5ms"). Throws ConfigError.
std::vector<double> parse_delay_list(std::string_view text);

/// The --help text.
std::string run_options_usage();

}  // namespace collsim::cuda_validate
