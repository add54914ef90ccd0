// Runs lowered schedules on real GPUs. Compiled only when the CUDA executor is built; every test
// that needs devices skips cleanly when there are none (as on the development and CI machines).
#include <gtest/gtest.h>

#include <algorithm>

#include "collsim/cuda_validate/gpu_runner.hpp"
#include "cuda_test_support.hpp"

namespace collsim::cuda_validate {
namespace {

// Skips the calling test unless at least `needed` devices exist; returns how many there are.
#define COLLSIM_REQUIRE_GPUS(needed)                                                               \
  const DeviceProbe probe = probe_devices();                                                       \
  if (!probe.available() || probe.count < (needed)) {                                              \
    GTEST_SKIP() << "needs " << (needed) << " CUDA device(s): "                                    \
                 << (probe.available() ? std::to_string(probe.count) + " found" : probe.reason()); \
  }

TEST(GpuExecutor, ProbeNeverThrowsAndExplainsAbsence) {
  DeviceProbe probe;
  EXPECT_NO_THROW(probe = probe_devices());
  if (!probe.available()) {
    EXPECT_FALSE(probe.reason().empty());
  }
}

TEST(GpuExecutor, MicroBenchmarksAndNativeAllReduceOnTwoGpus) {
  COLLSIM_REQUIRE_GPUS(2);
  GpuRunner runner(2, false);
  const DeviceInfo info = runner.device_info();
  EXPECT_FALSE(info.device.empty());
  for (std::size_t count : {1u, 1031u, 1u << 20}) {
    for (const IterationResult& r : {runner.run_p2p(count), runner.run_reduce_kernel(count),
                                     runner.run_nccl_allreduce(2, count, 1, 0.0)}) {
      EXPECT_EQ(r.mismatches, 0u) << count << ": " << r.first_mismatch;
      EXPECT_GT(r.time_s, 0.0);
    }
  }
}

TEST(GpuExecutor, DelayIsVisibleInTheTime) {
  COLLSIM_REQUIRE_GPUS(2);
  GpuRunner runner(2, false);
  const IterationResult r = runner.run_nccl_allreduce(2, 1024, 0, 2e-3);
  EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
  EXPECT_GE(r.time_s, 2e-3);
}

TEST(GpuExecutor, EveryAlgorithmOnEveryGpu) {
  COLLSIM_REQUIRE_GPUS(2);
  const Rank n = static_cast<Rank>(std::min(probe.count, 8));
  GpuRunner runner(n, false);
  for (const auto& info : all_algorithms()) {
    std::string why;
    const auto schedule = testing::try_generate(std::string(info.name), n, std::nullopt, why);
    if (!schedule) continue;
    for (std::size_t count : {std::size_t{schedule->num_chunks} * 1000, std::size_t{1031}, std::size_t{1} << 22}) {
      for (bool nccl_phase1 : {false, true}) {
        if (nccl_phase1 && (info.name != "stragglar" || count % schedule->num_chunks != 0)) continue;
        const LoweredSchedule lowered =
            lower_schedule(*schedule, LoweringOptions{count, true, nccl_phase1 ? "reduce_scatter" : ""});
        for (double delay_s : {0.0, 5e-4}) {
          const IterationResult r = runner.run_schedule(lowered, n - 1, delay_s);
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
  GpuRunner runner(n, false);
  std::vector<Rank> ready;
  for (Rank r = 0; r + 1 < n; ++r) ready.push_back(r);
  const IterationResult r = runner.run_reduce_scatter(ready, ready.size() * 4096);
  EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
}

TEST(GpuExecutor, GatedLaunch) {
  COLLSIM_REQUIRE_GPUS(2);
  GpuRunner runner(2, true);
  const LoweredSchedule lowered =
      lower_schedule(generate_schedule("ring", AlgorithmOptions{2, {}, 0}), LoweringOptions{1 << 16, true, ""});
  const IterationResult r = runner.run_schedule(lowered, 1, 0.0);
  EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
}

}  // namespace
}  // namespace collsim::cuda_validate
