#include <gtest/gtest.h>

#include <sstream>

#include "collsim/cuda_validate/measurement_csv.hpp"
#include "collsim/cuda_validate/measurement_driver.hpp"
#include "cuda_test_support.hpp"
#include "host_measurement_backend.hpp"

namespace collsim::cuda_validate {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

RunOptions options_from(std::vector<std::string> args) { return parse_run_options(args); }

TEST(MeasurementDriver, WritesOneValidatedRowPerMeasuredIteration) {
  const RunOptions options = options_from({"--algo", "ring,nccl", "--gpus", "4", "--sizes", "1KiB,4KiB", "--delays",
                                           "0,1ms", "--iters", "3", "--warmup", "1"});
  testing::HostMeasurementBackend backend;
  std::ostringstream csv;
  std::ostringstream log;
  const DriverSummary summary = run_measurements(options, backend, &csv, nullptr, log);
  EXPECT_TRUE(summary.ok());
  EXPECT_EQ(summary.configurations, 8u);
  EXPECT_EQ(summary.rows, 24u);
  EXPECT_EQ(backend.calls.size(), 32u) << "warm-up runs happen but are not written";
  const auto lines = lines_of(csv.str());
  ASSERT_EQ(lines.size(), 25u);
  EXPECT_EQ(lines[0], kMeasurementCsvHeader);
  EXPECT_TRUE(lines[1].starts_with("ring,4,1024,0,3,0,")) << lines[1];
  EXPECT_NE(lines[1].find(",\"Host, simulated\",0.0,none"), std::string::npos) << lines[1];
  EXPECT_TRUE(lines[4].starts_with("ring,4,1024,0.001,3,0,0.001")) << lines[4];
  EXPECT_TRUE(lines[13].starts_with("nccl,4,1024,0,3,0,")) << lines[13];
  EXPECT_EQ(backend.calls.front(), "schedule ring n=4 count=256");
  EXPECT_NE(log.str().find("ring n=4 size=1 KiB"), std::string::npos) << log.str();
}

TEST(MeasurementDriver, MicroBenchmarks) {
  const RunOptions options =
      options_from({"--algo", "none", "--micro", "all", "--gpus", "4", "--straggler", "1", "--sizes", "4KiB",
                    "--iters", "2", "--warmup", "0"});
  testing::HostMeasurementBackend backend;
  std::ostringstream micro;
  std::ostringstream log;
  const DriverSummary summary = run_measurements(options, backend, nullptr, &micro, log);
  ASSERT_TRUE(summary.ok()) << summary.failures.front();
  const auto lines = lines_of(micro.str());
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[0], kMeasurementCsvHeader);
  EXPECT_TRUE(lines[1].starts_with("p2p,2,4096,0,-1,0,")) << lines[1];
  EXPECT_TRUE(lines[3].starts_with("reduce_kernel,1,4096,0,-1,0,")) << lines[3];
  // 1024 floats rounded down to a multiple of the 3 ready ranks.
  EXPECT_TRUE(lines[5].starts_with("reduce_scatter_nccl,3,4092,0,-1,0,")) << lines[5];
  EXPECT_EQ(backend.calls.back(), "reduce_scatter ranks=3 count=1023");
}

TEST(MeasurementDriver, AWrongResultFailsItsConfigurationOnly) {
  const RunOptions options =
      options_from({"--algo", "ring", "--gpus", "3", "--sizes", "64B,128B", "--iters", "3", "--warmup", "1"});
  testing::HostMeasurementBackend backend;
  backend.corrupt_call = 2;  // the second measured run of the first size
  std::ostringstream csv;
  std::ostringstream log;
  const DriverSummary summary = run_measurements(options, backend, &csv, nullptr, log);
  EXPECT_FALSE(summary.ok());
  ASSERT_EQ(summary.failures.size(), 1u);
  EXPECT_NE(summary.failures[0].find("WRONG RESULT ring n=3 size=64 B"), std::string::npos) << summary.failures[0];
  EXPECT_NE(summary.failures[0].find("measured iteration 1"), std::string::npos) << summary.failures[0];
  EXPECT_NE(log.str().find("WRONG RESULT"), std::string::npos);
  EXPECT_EQ(backend.calls.size(), 3u + 4u) << "the failing configuration stops at the wrong run";
  const auto lines = lines_of(csv.str());
  ASSERT_EQ(lines.size(), 4u) << "only the 128B configuration is written";
  EXPECT_TRUE(lines[1].starts_with("ring,3,128,0,2,0,")) << lines[1];
}

TEST(MeasurementDriver, StragglarWithNcclPhaseOneRoundsTheSize) {
  std::string why;
  if (!testing::try_generate("stragglar", 8, std::nullopt, why)) GTEST_SKIP() << "stragglar: " << why;
  const RunOptions options = options_from({"--algo", "stragglar", "--gpus", "8", "--sizes", "1KiB", "--iters", "1",
                                           "--warmup", "0", "--delays", "0,2ms"});
  testing::HostMeasurementBackend backend;
  std::ostringstream csv;
  std::ostringstream log;
  const DriverSummary summary = run_measurements(options, backend, &csv, nullptr, log);
  ASSERT_TRUE(summary.ok()) << summary.failures.front();
  const auto lines = lines_of(csv.str());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(lines[1].starts_with("stragglar,8,1008,0,7,0,")) << "256 floats -> 252 = 36 blocks of 7: " << lines[1];
}

TEST(MeasurementDriver, AllReduceAndMicroRowsGoToTheirOwnFiles) {
  const RunOptions options = options_from({"--algo", "nccl", "--micro", "reduce", "--gpus", "2", "--sizes", "64B",
                                           "--iters", "1", "--warmup", "0"});
  testing::HostMeasurementBackend backend;
  std::ostringstream csv;
  std::ostringstream micro;
  std::ostringstream log;
  run_measurements(options, backend, &csv, &micro, log);
  const auto all_reduce = lines_of(csv.str());
  const auto micro_lines = lines_of(micro.str());
  ASSERT_EQ(all_reduce.size(), 2u);
  ASSERT_EQ(micro_lines.size(), 2u);
  EXPECT_TRUE(all_reduce[1].starts_with("nccl,2,64,")) << all_reduce[1];
  EXPECT_TRUE(micro_lines[1].starts_with("reduce_kernel,1,64,")) << micro_lines[1];
  // A missing stream for rows that exist is a programming error.
  EXPECT_THROW(run_measurements(options, backend, &csv, nullptr, log), InternalError);
}

TEST(MeasurementDriver, SizesTooSmallForAConfigurationAreSkipped) {
  const RunOptions options = options_from({"--algo", "none", "--micro", "reduce_scatter", "--gpus", "8", "--sizes",
                                           "8B,64B", "--iters", "1", "--warmup", "0"});
  testing::HostMeasurementBackend backend;
  std::ostringstream micro;
  std::ostringstream log;
  const DriverSummary summary = run_measurements(options, backend, nullptr, &micro, log);
  EXPECT_TRUE(summary.ok());
  ASSERT_EQ(summary.skipped.size(), 1u);
  EXPECT_NE(summary.skipped[0].find("size 8 B skipped (fewer than 7 floats)"), std::string::npos) << summary.skipped[0];
  const auto lines = lines_of(micro.str());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(lines[1].starts_with("reduce_scatter_nccl,7,56,")) << lines[1];
}

TEST(MeasurementDriver, Helpers) {
  EXPECT_EQ(element_count(1001, 1, "x"), 250u);
  EXPECT_EQ(element_count(16, 3, "x"), 3u);
  EXPECT_THROW(element_count(3, 1, "x"), ConfigError);
  EXPECT_THROW(element_count(8, 7, "x"), ConfigError);

  RunOptions options;
  EXPECT_EQ(lowering_options_for(options, "stragglar", 7).nccl_reduce_scatter_phase, "reduce_scatter");
  EXPECT_EQ(lowering_options_for(options, "stragglar", 7).count, 7u);
  EXPECT_EQ(lowering_options_for(options, "ring", 7).nccl_reduce_scatter_phase, "");
  options.phase1 = Phase1Mode::Schedule;
  EXPECT_EQ(lowering_options_for(options, "stragglar", 7).nccl_reduce_scatter_phase, "");
}

TEST(MeasurementDriver, CheckSchedulesReportsUnsupportedCombinations) {
  EXPECT_NO_THROW(check_schedules(options_from({"--algo", "ring,nccl", "--gpus", "5"})));
  // Find any registry algorithm and n the generators reject (there is always one while a
  // generator is unwritten or an algorithm does not support odd n); skip if none is left.
  for (const auto& info : all_algorithms()) {
    for (Rank n = 2; n <= 8; ++n) {
      std::string why;
      if (testing::try_generate(std::string(info.name), n, std::nullopt, why)) continue;
      RunOptions options = options_from({"--algo", std::string(info.name), "--gpus", std::to_string(n)});
      EXPECT_THROW(check_schedules(options), ScheduleError) << info.name << " n=" << n;
      return;
    }
  }
  GTEST_SKIP() << "every registry algorithm supports n = 2..8";
}

}  // namespace
}  // namespace collsim::cuda_validate
