// The GPU side of collsim-cuda: executes lowered schedules, native ncclAllReduce and the
// micro-benchmarks on real devices with CUDA + NCCL. This header has no CUDA types, so plain C++
// code (main, tests) uses it without nvcc.
//
// One process drives 2..8 GPUs of one node: devices 0..n-1 (after CUDA_VISIBLE_DEVICES), one
// stream per GPU, one NCCL clique from ncclCommInitAll, plus one clique per subset of ranks that a
// ReduceScatter needs. A schedule round is one ncclGroupStart/End holding every GPU's
// ncclSend/ncclRecv of that round; the round's copy/reduce apply operations follow on each GPU's
// stream. The host never waits between rounds: stream order and NCCL's rendezvous carry the
// dependencies, so a GPU runs ahead until it needs a peer, exactly the per-rank semantics of
// schedule.hpp.
//
// Timing: after the buffers are initialised, every participating stream waits on a start event
// recorded on the first participant (the timer GPU); the straggler's stream first runs a spin
// kernel timed with %globaltimer for the delay; every GPU records an end event, the timer GPU waits
// on all of them and records a join event. time = elapsed(start, join) on the timer GPU: first
// start to last finish, including the delay and the cross-GPU event latency (a few microseconds,
// the same for every algorithm). After timing, a kernel on every GPU compares its buffer with the
// expected sums of input_value (input_data.hpp) and counts mismatches.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collsim/cuda_validate/measurement_driver.hpp"

namespace collsim::cuda_validate {

/// Result of looking for CUDA devices.
struct DeviceProbe {
  int count = 0;        ///< devices visible to this process
  std::string error;    ///< cudaGetDeviceCount's error string, empty on success
  bool available() const { return error.empty() && count > 0; }
  /// Why no device is available: the CUDA error string, or "no device found".
  std::string reason() const { return error.empty() ? "no device found" : error; }
};

/// Asks the CUDA runtime how many devices there are. Never throws: any error (no driver, no
/// device, a broken installation) is reported in `error`.
DeviceProbe probe_devices();

/// Runs measurements on devices 0..num_gpus-1 (see the file comment).
class GpuRunner final : public MeasurementBackend {
 public:
  /// Creates the streams, events and the NCCL clique. `gate` holds the GPUs with a kernel that
  /// spins on a host flag until the host has enqueued a whole run (10 s timeout), so host launch
  /// time is not measured. Throws CudaError (with the failing call, file, line and error) if
  /// fewer than num_gpus devices exist or CUDA/NCCL fail; ConfigError if num_gpus is not 1..8.
  GpuRunner(Rank num_gpus, bool gate);
  ~GpuRunner() override;
  GpuRunner(const GpuRunner&) = delete;
  GpuRunner& operator=(const GpuRunner&) = delete;

  DeviceInfo device_info() override;
  IterationResult run_schedule(const LoweredSchedule& lowered, Rank straggler, double delay_s) override;
  IterationResult run_nccl_allreduce(Rank n, std::size_t count, Rank straggler, double delay_s) override;
  IterationResult run_p2p(std::size_t count) override;
  IterationResult run_reduce_kernel(std::size_t count) override;
  IterationResult run_reduce_scatter(const std::vector<Rank>& ranks, std::size_t count) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace collsim::cuda_validate
