// Runs lowered schedules on real GPUs. Compiled only when the CUDA executor is built; every test
// that needs devices skips cleanly when there are none (as on the development and CI machines).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "collsim/cuda_validate/gpu_runner.hpp"
#include "cuda_test_support.hpp"

namespace collsim::cuda_validate {
namespace {

constexpr double kTimeout_s = 60.0;

// Skips the calling test unless at least `needed` devices exist. A broken CUDA installation
// (driver older than the runtime, ...) fails instead: it must not pass as a machine without GPUs.
#define COLLSIM_REQUIRE_GPUS(needed)                                                             \
  const DeviceProbe probe = probe_devices();                                                     \
  if (probe.outcome == DeviceProbe::Outcome::Broken) FAIL() << probe.reason;                     \
  if (!probe.available() || probe.count < (needed)) {                                            \
    GTEST_SKIP() << "needs " << (needed) << " CUDA device(s): "                                  \
                 << (probe.available() ? std::to_string(probe.count) + " found" : probe.reason); \
  }

TEST(GpuExecutor, ProbeNeverThrowsAndExplainsAbsence) {
  DeviceProbe probe;
  EXPECT_NO_THROW(probe = probe_devices());
  if (!probe.available()) {
    EXPECT_FALSE(probe.reason.empty());
  }
}

TEST(GpuExecutor, OnlyAMissingDeviceOrDriverCountsAsNoDevice) {
  using Outcome = DeviceProbe::Outcome;
  EXPECT_EQ(classify_device_probe(ProbeStatus::Ok, "", 13000, 13000, 8).outcome, Outcome::Available);
  EXPECT_EQ(classify_device_probe(ProbeStatus::Ok, "", 13000, 13000, 0).outcome, Outcome::NoDevice);
  EXPECT_EQ(classify_device_probe(ProbeStatus::NoDevice, "cudaErrorNoDevice", 13000, 13000, 0).outcome,
            Outcome::NoDevice);
  // No libcuda at all: the runtime says "insufficient driver", the driver version is 0.
  const DeviceProbe none = classify_device_probe(ProbeStatus::InsufficientDriver, "cudaErrorInsufficientDriver", 0,
                                                 13000, 0);
  EXPECT_EQ(none.outcome, Outcome::NoDevice);
  EXPECT_NE(none.reason.find("no CUDA driver installed"), std::string::npos) << none.reason;
  // A real driver, too old for the runtime: a broken installation, not "no GPU".
  const DeviceProbe old = classify_device_probe(ProbeStatus::InsufficientDriver, "cudaErrorInsufficientDriver", 12040,
                                                13000, 0);
  EXPECT_EQ(old.outcome, Outcome::Broken);
  EXPECT_NE(old.reason.find("the CUDA driver 12.4 is older than the CUDA runtime 13.0"), std::string::npos)
      << old.reason;
  EXPECT_EQ(classify_device_probe(ProbeStatus::OtherError, "cudaErrorSystemNotReady", 13000, 13000, 0).outcome,
            Outcome::Broken);
}

TEST(GpuExecutor, MicroBenchmarksAndNativeAllReduceOnTwoGpus) {
  COLLSIM_REQUIRE_GPUS(2);
  GpuRunner runner(2, kTimeout_s);
  const DeviceInfo info = runner.device_info();
  EXPECT_FALSE(info.device.empty());
  for (std::size_t count : {1u, 1031u, 1u << 20}) {
    for (const IterationResult& r : {runner.run_p2p(count, true), runner.run_reduce_kernel(count, true),
                                     runner.run_nccl_allreduce(2, count, 1, 0.0, true),
                                     runner.run_empty({0, 1}, true)}) {
      EXPECT_EQ(r.mismatches, 0u) << count << ": " << r.first_mismatch;
      EXPECT_GT(r.time_s, 0.0);
    }
  }
}

TEST(GpuExecutor, DelayIsVisibleInTheTime) {
  COLLSIM_REQUIRE_GPUS(2);
  GpuRunner runner(2, kTimeout_s);
  const IterationResult r = runner.run_nccl_allreduce(2, 1024, 0, 2e-3, true);
  EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
  EXPECT_GE(r.time_s, 2e-3);
}

TEST(GpuExecutor, EveryAlgorithmOnEveryGpu) {
  COLLSIM_REQUIRE_GPUS(2);
  const Rank n = static_cast<Rank>(std::min(probe.count, 8));
  GpuRunner runner(n, kTimeout_s);
  for (const auto& info : all_algorithms()) {
    std::string why;
    const auto schedule = testing::try_generate(std::string(info.name), n, std::nullopt, why);
    if (!schedule) continue;
    for (std::size_t count :
         {std::size_t{schedule->num_chunks} * 4000, std::size_t{1031}, std::size_t{1} << 22}) {
      for (bool nccl_phase1 : {false, true}) {
        if (nccl_phase1 && (!has_ready_reduce_scatter(*schedule) ||
                            count % (kChunkAlignElements * schedule->num_chunks) != 0)) {
          continue;
        }
        const LoweredSchedule lowered = lower_schedule(
            *schedule, LoweringOptions{count, true, nccl_phase1 ? std::string(kReadyReduceScatterPhase) : ""});
        for (double delay_s : {0.0, 5e-4}) {
          const IterationResult r = runner.run_schedule(lowered, n - 1, delay_s, delay_s == 0.0);
          EXPECT_EQ(r.mismatches, 0u) << info.name << " n=" << n << " count=" << count << ": " << r.first_mismatch;
          EXPECT_GE(r.time_s, delay_s);
        }
      }
    }
  }
}

TEST(GpuExecutor, ReduceScatterAmongTheReadyGpus) {
  COLLSIM_REQUIRE_GPUS(3);
  const Rank n = static_cast<Rank>(std::min(probe.count, 8));
  GpuRunner runner(n, kTimeout_s);
  std::vector<Rank> ready;
  for (Rank r = 0; r + 1 < n; ++r) ready.push_back(r);
  const IterationResult r = runner.run_reduce_scatter(ready, ready.size() * 4096, true);
  EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
}

TEST(GpuExecutor, StragglerZeroPhaseOneOnItsSubCommunicator) {
  COLLSIM_REQUIRE_GPUS(8);
  std::string why;
  const auto schedule = testing::try_generate("stragglar", 8, Rank{0}, why);
  if (!schedule) GTEST_SKIP() << why;
  GpuRunner runner(8, kTimeout_s);
  const LoweredSchedule lowered =
      lower_schedule(*schedule, LoweringOptions{4 * 7 * 4096, true, std::string(kReadyReduceScatterPhase)});
  ASSERT_EQ(lowered.collectives.at(0).ranks, (std::vector<Rank>{7, 1, 2, 3, 4, 5, 6}));
  for (bool gated : {true, false}) {
    const IterationResult r = runner.run_schedule(lowered, 0, 1e-3, gated);
    EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
    EXPECT_GE(r.time_s, 1e-3);
  }
}

// The first run of a fresh runner is gated: kernels and NCCL connections must be ready first.
TEST(GpuExecutor, GatedLaunchFromTheFirstRun) {
  COLLSIM_REQUIRE_GPUS(2);
  GpuRunner runner(2, kTimeout_s);
  const LoweredSchedule lowered =
      lower_schedule(generate_schedule("ring", AlgorithmOptions{2, {}, 0}), LoweringOptions{1 << 16, true, ""});
  const IterationResult gated = runner.run_schedule(lowered, 1, 0.0, true);
  EXPECT_EQ(gated.mismatches, 0u) << gated.first_mismatch;
  const IterationResult ungated = runner.run_schedule(lowered, 1, 0.0, false);
  EXPECT_EQ(ungated.mismatches, 0u) << ungated.first_mismatch;
}

}  // namespace
}  // namespace collsim::cuda_validate
