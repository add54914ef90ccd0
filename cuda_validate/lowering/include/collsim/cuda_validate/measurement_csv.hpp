// The measurements CSV written by collsim-cuda and read by `collsim calibrate`. The row type,
// header and writer live with the reader in collsim/models/formats/measurement_csv.hpp (one struct for
// both ends); this file adds what only the producer computes (bus factors, bandwidths).
//
// Schema (fixed column order, one header line, then one row per measured iteration; no comments):
//   algorithm       registry name (stragglar, ring, ...) or "nccl" for native ncclAllReduce;
//                   in the separate micro-benchmark file: "p2p", "reduce_kernel",
//                   "reduce_scatter_nccl", "empty_timed_run"
//   n               GPUs taking part (p2p: 2, reduce_kernel: 1, reduce_scatter_nccl: N-1,
//                   empty_timed_run: the participants of the runs it stands for)
//   size_bytes      buffer size actually used, whole bytes (AllReduce and ReduceScatter: the
//                   whole input buffer of one rank; p2p: the message; reduce_kernel: the vector
//                   added; empty_timed_run: 4, one float per rank initialised)
//   delay_s         injected straggler delay, seconds (0 for micro-benchmarks)
//   straggler       delayed rank, -1 for micro-benchmarks
//   iteration       0-based index among the measured iterations (warm-up ones are not written)
//   time_s          first start to last finish over the GPUs, seconds, including the delay
//   algbw_GBps      size_bytes / time_s / 1e9 (nccl-tests convention; includes the delay)
//   busbw_GBps      algbw_GBps * bus_factor (models/collective.hpp): AllReduce 2(n-1)/n,
//                   ReduceScatter (n-1)/n, p2p and reduce_kernel 1
//   launch          "gated" (GPUs held until the host enqueued the whole run: device time only)
//                   or "ungated" (host enqueue time included)
//   nccl_algo       NCCL_ALGO of the process environment, empty when unset
//   nccl_proto      NCCL_PROTO of the process environment, empty when unset
//   device          CUDA device name of GPU 0 (quoted if it contains a comma or quote)
//   driver_version  CUDA driver version, "13.0"
//   nccl_version    NCCL version, "2.28.9"
// Numbers are written in the shortest form that reads back to the same double.
#pragma once

#include <cstdint>
#include <optional>

#include "collsim/models/collective.hpp"
#include "collsim/models/formats/measurement_csv.hpp"

namespace collsim::cuda_validate {

/// Fills algbw_GBps and busbw_GBps of `row` from size_bytes, time_s, n and `collective`
/// (bus_factor of models; nullopt for a local kernel, which moves nothing over a bus: busbw =
/// algbw). Throws ConfigError if time_s is not positive.
void compute_bandwidths(MeasurementRow& row, std::optional<Collective> collective);

}  // namespace collsim::cuda_validate
