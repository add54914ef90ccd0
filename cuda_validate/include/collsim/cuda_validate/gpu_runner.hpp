// The GPU side of collsim-cuda: executes lowered schedules, native ncclAllReduce and the
// micro-benchmarks on real devices with CUDA + NCCL. This header has no CUDA types, so plain C++
// code (main, tests) uses it without nvcc.
//
// One process drives 1..8 GPUs of one node: devices 0..n-1 (after CUDA_VISIBLE_DEVICES), one
// stream per GPU, one NCCL clique from ncclCommInitAll, plus one clique per subset of ranks that a
// ReduceScatter needs. A schedule runs as its ExecutionPlan (execution_plan.hpp), which this
// runner only translates call by call into ncclGroupStart/ncclSend/ncclRecv/ncclReduceScatter/
// ncclGroupEnd, cudaMemcpyAsync and the reduction kernel; the CPU host backend executes the same
// plan in the tests.
//
// Timing: after the buffers are initialised, every participating stream waits on a start event
// recorded on the first participant (the timer GPU); the straggler's stream first runs a spin
// kernel timed with %globaltimer for the delay; every GPU records an end event, the timer GPU waits
// on all of them and records a join event. time = elapsed(start, join) on the timer GPU: first
// start to last finish, including the delay and the cross-GPU event latency (the
// empty_timed_run micro-benchmark measures that frame alone). Gated runs hold the timer GPU with
// a kernel spinning on a host-mapped flag until the host has enqueued the whole run, so host
// enqueue time is not in time_s. After timing, a kernel on every GPU compares its buffer with the
// expected sums of input_value (input_data.hpp) and counts mismatches.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collsim/cuda_validate/measurement_driver.hpp"
#include "collsim/models/error.hpp"

namespace collsim::cuda_validate {

/// The GPUs did not finish a run before the deadline, or NCCL reported an asynchronous error.
/// The runner has aborted its NCCL communicators and cannot run anything else.
class GpuHangError : public CudaError {
 public:
  using CudaError::CudaError;
};

/// What cudaGetDeviceCount said, reduced to what collsim-cuda acts on.
enum class ProbeStatus {
  Ok,                  ///< cudaSuccess
  NoDevice,            ///< cudaErrorNoDevice
  InsufficientDriver,  ///< cudaErrorInsufficientDriver
  OtherError,          ///< anything else
};

/// Result of looking for CUDA devices.
struct DeviceProbe {
  enum class Outcome { Available, NoDevice, Broken };
  Outcome outcome = Outcome::NoDevice;
  int count = 0;        ///< devices visible to this process
  std::string reason;   ///< why no device is usable; empty when available
  bool available() const { return outcome == Outcome::Available; }
};

/// The decision behind probe_devices, separate so it is tested without a GPU: no driver at all
/// (driver version 0), cudaErrorNoDevice or zero devices mean "no device" (collsim-cuda exits 3,
/// GPU tests skip); a driver older than the runtime or any other error means a broken
/// installation (exit 1), which must not pass as a machine without GPUs. Versions are CUDA's
/// 1000 * major + 10 * minor.
DeviceProbe classify_device_probe(ProbeStatus status, const std::string& error, int driver_version,
                                  int runtime_version, int count);

/// Asks the CUDA runtime how many devices there are. Never throws.
DeviceProbe probe_devices();

/// Runs measurements on devices 0..num_gpus-1 (see the file comment).
class GpuRunner final : public MeasurementBackend {
 public:
  /// Creates the streams, events and the NCCL clique, and loads every kernel of collsim-cuda on
  /// every device. A run not finished `timeout_s` after its injected delay is a hang
  /// (GpuHangError). Throws CudaError (with the failing call, file, line and error) if fewer than
  /// num_gpus devices exist or CUDA/NCCL fail; ConfigError if num_gpus is not 1..8 or timeout_s
  /// is not positive.
  GpuRunner(Rank num_gpus, double timeout_s);
  ~GpuRunner() override;
  GpuRunner(const GpuRunner&) = delete;
  GpuRunner& operator=(const GpuRunner&) = delete;

  DeviceInfo device_info() override;
  IterationResult run_schedule(const LoweredSchedule& lowered, Rank straggler, double delay_s, bool gated) override;
  IterationResult run_nccl_allreduce(Rank n, std::size_t count, Rank straggler, double delay_s, bool gated) override;
  IterationResult run_p2p(std::size_t count, bool gated) override;
  IterationResult run_reduce_kernel(std::size_t count, bool gated) override;
  IterationResult run_reduce_scatter(const std::vector<Rank>& ranks, std::size_t count, bool gated) override;
  IterationResult run_empty(const std::vector<Rank>& ranks, bool gated) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace collsim::cuda_validate
