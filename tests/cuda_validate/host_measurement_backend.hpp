// A MeasurementBackend that runs everything on the CPU host backend, so the measurement loop of
// collsim-cuda is tested without a GPU. Times are synthetic (deterministic), results are real.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "collsim/cuda_validate/host_backend.hpp"
#include "collsim/cuda_validate/input_data.hpp"
#include "collsim/cuda_validate/measurement_driver.hpp"
#include "collsim/models/error.hpp"

namespace collsim::cuda_validate::testing {

class HostMeasurementBackend : public MeasurementBackend {
 public:
  /// The run with this 0-based call index gets one element corrupted before validation.
  int corrupt_call = -1;
  /// One entry per run: "schedule ring n=4 count=256", "nccl n=4 count=256", ...
  std::vector<std::string> calls;
  /// Whether each run was gated.
  std::vector<bool> gated;

  DeviceInfo device_info() override { return DeviceInfo{"Host, simulated", "0.0", "none"}; }

  IterationResult run_schedule(const LoweredSchedule& lowered, Rank /*straggler*/, double delay_s,
                               bool gate) override {
    gated.push_back(gate);
    // The same plan the GPU runner translates.
    auto buffers = make_input_buffers(lowered.n, lowered.count);
    execute_plan_on_host(build_execution_plan(lowered), buffers, HostRunOptions{calls.size() + 1});
    return finish(fmt::format("schedule {} n={} count={}", lowered.algorithm, lowered.n, lowered.count), buffers,
                  delay_s);
  }

  IterationResult run_nccl_allreduce(Rank n, std::size_t count, Rank /*straggler*/, double delay_s,
                                     bool gate) override {
    gated.push_back(gate);
    auto buffers = make_input_buffers(n, count);
    std::vector<float> sum(count, 0.0f);
    for (const auto& b : buffers) {
      for (std::size_t e = 0; e < count; ++e) sum[e] += b[e];
    }
    for (auto& b : buffers) b = sum;
    return finish(fmt::format("nccl n={} count={}", n, count), buffers, delay_s);
  }

  IterationResult run_p2p(std::size_t count, bool gate) override {
    gated.push_back(gate);
    std::vector<float> received(count);
    for (std::size_t e = 0; e < count; ++e) received[e] = input_value(0, e);
    return finish_masked(fmt::format("p2p count={}", count), received, 0, 0b1);
  }

  IterationResult run_reduce_kernel(std::size_t count, bool gate) override {
    gated.push_back(gate);
    std::vector<float> dst(count);
    for (std::size_t e = 0; e < count; ++e) dst[e] = input_value(0, e) + input_value(1, e);
    return finish_masked(fmt::format("reduce count={}", count), dst, 0, 0b11);
  }

  IterationResult run_reduce_scatter(const std::vector<Rank>& ranks, std::size_t count, bool gate) override {
    gated.push_back(gate);
    // NCCL's own check, which the GPU runner relies on: fewer than 2 ranks is an error there.
    if (ranks.size() < 2 || count % ranks.size() != 0) {
      throw ConfigError(fmt::format("ReduceScatter of {} elements among {} ranks", count, ranks.size()));
    }
    const std::size_t block = count / ranks.size();
    std::uint64_t mask = 0;
    for (Rank r : ranks) mask |= std::uint64_t{1} << r;
    std::vector<float> owned(block);
    for (std::size_t j = 0; j < block; ++j) owned[j] = expected_sum(mask, j);
    return finish_masked(fmt::format("reduce_scatter ranks={} count={}", ranks.size(), count), owned, 0, mask);
  }

  IterationResult run_empty(const std::vector<Rank>& ranks, bool gate) override {
    gated.push_back(gate);
    return finish_masked(fmt::format("empty ranks={}", ranks.size()), {}, 0, 0);
  }

 private:
  double fake_time(double delay_s) const { return delay_s + 1e-6 * static_cast<double>(calls.size()); }

  IterationResult finish(std::string call, std::vector<std::vector<float>>& buffers, double delay_s) {
    if (static_cast<int>(calls.size()) == corrupt_call && !buffers.back().empty()) buffers.back().back() += 1.0f;
    calls.push_back(std::move(call));
    const ValidationResult v = validate_allreduce(buffers);
    return IterationResult{fake_time(delay_s), v.mismatches, v.first_mismatch};
  }

  IterationResult finish_masked(std::string call, std::vector<float> values, std::size_t first, std::uint64_t mask) {
    if (static_cast<int>(calls.size()) == corrupt_call && !values.empty()) values.back() += 1.0f;
    calls.push_back(std::move(call));
    IterationResult result{fake_time(0.0), 0, {}};
    for (std::size_t j = 0; j < values.size(); ++j) {
      if (values[j] != expected_sum(mask, first + j) && result.mismatches++ == 0) {
        result.first_mismatch = fmt::format("element {}", first + j);
      }
    }
    return result;
  }
};

}  // namespace collsim::cuda_validate::testing
