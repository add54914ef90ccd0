// The measurements CSV written by collsim-cuda and read by `collsim calibrate`.
//
// Schema (fixed column order, one header line, then one row per measured iteration; no comments):
//   algorithm       registry name (stragglar, ring, ...) or "nccl" for native ncclAllReduce;
//                   in the separate micro-benchmark file: "p2p", "reduce_kernel",
//                   "reduce_scatter_nccl"
//   n               GPUs taking part (p2p: 2, reduce_kernel: 1, reduce_scatter_nccl: N-1)
//   size_bytes      buffer size actually used, bytes (AllReduce and ReduceScatter: the whole
//                   input buffer of one rank; p2p: the message; reduce_kernel: the vector added)
//   delay_s         injected straggler delay, seconds (0 for micro-benchmarks)
//   straggler       delayed rank, -1 for micro-benchmarks
//   iteration       0-based index among the measured iterations (warm-up ones are not written)
//   time_s          first start to last finish over the GPUs, seconds, including the delay
//   algbw_GBps      size_bytes / time_s / 1e9 (nccl-tests convention; includes the delay)
//   busbw_GBps      algbw_GBps * bus_factor (models/collective.hpp): AllReduce 2(n-1)/n,
//                   ReduceScatter (n-1)/n, p2p and reduce_kernel 1
//   device          CUDA device name of GPU 0 (quoted if it contains a comma or quote)
//   driver_version  CUDA driver version, "13.0"
//   nccl_version    NCCL version, "2.28.9"
// Numbers are written in the shortest form that reads back to the same double.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "collsim/models/collective.hpp"

namespace collsim::cuda_validate {

/// The header line, without the line break.
inline constexpr std::string_view kMeasurementCsvHeader =
    "algorithm,n,size_bytes,delay_s,straggler,iteration,time_s,algbw_GBps,busbw_GBps,device,driver_version,"
    "nccl_version";

/// One CSV row.
struct MeasurementRow {
  std::string algorithm;
  std::uint32_t n = 0;
  std::uint64_t size_bytes = 0;
  double delay_s = 0.0;
  std::int64_t straggler = -1;
  std::uint32_t iteration = 0;
  double time_s = 0.0;
  double algbw_GBps = 0.0;
  double busbw_GBps = 0.0;
  std::string device;
  std::string driver_version;
  std::string nccl_version;
};

/// Fills algbw_GBps and busbw_GBps of `row` from size_bytes, time_s, n and `collective`
/// (bus_factor of models; nullopt for a local kernel, which moves nothing over a bus: busbw =
/// algbw). Throws ConfigError if time_s is not positive.
void compute_bandwidths(MeasurementRow& row, std::optional<Collective> collective);

/// One data line, without the line break.
std::string format_csv_row(const MeasurementRow& row);

}  // namespace collsim::cuda_validate
