// collsim's own measurement CSVs (written by collsim-cuda: the AllReduce runs and the
// micro-benchmark file; column meanings in cuda_validate/README.md), one row per iteration:
//   algorithm,n,size_bytes,delay_s,straggler,iteration,time_s,algbw_GBps,busbw_GBps,launch,
//   nccl_algo,nccl_proto,device,driver_version,nccl_version
// One row type for the writer (collsim-cuda) and the reader (`collsim calibrate`), so the two
// cannot drift apart. The reader finds columns by header name, so their order may change, extra
// columns are ignored, and files written before a column existed still read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace collsim {

/// One measured iteration.
struct MeasurementRow {
  std::string algorithm;        ///< registry name, "nccl" (native ncclAllReduce) or a micro-benchmark
                                ///< ("p2p", "reduce_scatter_nccl", "reduce_kernel")
  std::uint32_t n = 0;          ///< GPUs taking part, >= 1 (reduce_kernel runs on one)
  std::uint64_t size_bytes = 0; ///< buffer per rank (p2p: the message), whole bytes (> 0)
  double delay_s = 0;           ///< injected straggler delay, seconds (>= 0)
  std::int64_t straggler = -1;  ///< straggler rank, -1 when none
  std::uint64_t iteration = 0;
  double time_s = 0;            ///< first start to last finish, seconds (> 0)
  double algbw_GBps = 0;        ///< 0 when the column is absent
  double busbw_GBps = 0;
  /// "gated" (GPUs held until the whole run was enqueued: device time only), "ungated" (host
  /// enqueue time included), empty when the column is absent (files of older versions).
  std::string launch;
  std::string nccl_algo;        ///< NCCL_ALGO of the run, "" when unset
  std::string nccl_proto;       ///< NCCL_PROTO of the run, "" when unset
  std::string device;
  std::string driver_version;
  std::string nccl_version;
  std::size_t line = 0;         ///< 1-based line number in the source (reader only)
};

/// The header line the writer emits, without the line break.
inline constexpr std::string_view kMeasurementCsvHeader =
    "algorithm,n,size_bytes,delay_s,straggler,iteration,time_s,algbw_GBps,busbw_GBps,launch,nccl_algo,nccl_proto,"
    "device,driver_version,nccl_version";

/// One data line in the order of kMeasurementCsvHeader, without the line break. Numbers are
/// written in the shortest form that reads back to the same double; `line` is not written.
std::string format_measurement_csv_row(const MeasurementRow& row);

struct MeasurementCsv {
  std::string source;
  std::vector<MeasurementRow> rows;  ///< never empty
};

/// True when `text` starts (after blank and '#' lines) with a header whose first field is
/// "algorithm": how calibrate tells our CSV from an nccl-tests log.
bool looks_like_measurement_csv(std::string_view text);

/// Parses the CSV text. Required columns: algorithm, n, size_bytes, time_s; optional:
/// delay_s (default 0), straggler (-1), iteration, algbw_GBps, busbw_GBps, launch, nccl_algo,
/// nccl_proto, device, driver_version, nccl_version. Fields may be double-quoted ("" escapes a quote); blank lines
/// and lines starting with '#' are skipped.
/// Throws ConfigError naming `source` (and line and column for row errors) for an empty file,
/// a missing required or duplicated column, a wrong field count, a non-numeric or out-of-range
/// number (n < 1, size not a positive whole number of bytes, time <= 0, delay < 0, straggler
/// < -1 or >= n), a launch other than gated/ungated, or no data rows.
MeasurementCsv parse_measurement_csv(std::string_view text, std::string_view source);

/// Reads and parses a CSV file. Throws ConfigError when unreadable, as parse_measurement_csv otherwise.
MeasurementCsv read_measurement_csv(const std::filesystem::path& path);

}  // namespace collsim
