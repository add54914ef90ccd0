#include <gtest/gtest.h>

#include <fmt/format.h>

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

// stragglar_online on GPUs: the harness delays --straggler, so the schedule it runs is the one the
// engines would pick for that rank: the delayed rank takes no part in the first phase.
TEST(MeasurementDriver, StragglarOnlineIsRelabelledForTheDelayedRank) {
  struct Recording : testing::HostMeasurementBackend {
    std::vector<std::uint32_t> first_phase;  // per rank, of the last schedule run
    IterationResult run_schedule(const LoweredSchedule& lowered, Rank straggler, double delay_s, bool gate) override {
      first_phase.clear();
      for (const RankProgram& program : lowered.programs) first_phase.push_back(program.steps.front().phase);
      return HostMeasurementBackend::run_schedule(lowered, straggler, delay_s, gate);
    }
  };
  const RunOptions options = options_from({"--algo", "stragglar_online", "--gpus", "4", "--straggler", "1", "--sizes",
                                           "1KiB", "--delays", "1ms", "--iters", "1", "--warmup", "0"});
  Recording backend;
  std::ostringstream csv;
  std::ostringstream log;
  EXPECT_TRUE(run_measurements(options, backend, &csv, nullptr, log).ok()) << log.str();
  ASSERT_EQ(backend.first_phase.size(), 4u);
  EXPECT_EQ(backend.first_phase[1], 1u) << "the delayed rank starts in the completion";
  EXPECT_EQ(backend.first_phase[3], 0u) << "rank 3 is present: it takes part in the ReduceScatter";
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
  ASSERT_EQ(lines.size(), 1u + 2u * (3u + 4u));
  EXPECT_EQ(lines[0], kMeasurementCsvHeader);
  EXPECT_TRUE(lines[1].starts_with("p2p,2,4096,0,-1,0,")) << lines[1];
  EXPECT_TRUE(lines[3].starts_with("reduce_kernel,1,4096,0,-1,0,")) << lines[3];
  // 1024 floats rounded down to 16-byte blocks for the 3 ready ranks: a multiple of 12.
  EXPECT_TRUE(lines[5].starts_with("reduce_scatter_nccl,3,4080,0,-1,0,")) << lines[5];
  EXPECT_EQ(backend.calls[5], "reduce_scatter ranks=3 count=1020");
  // The empty timing frame once per participant count 1..4.
  EXPECT_TRUE(lines[7].starts_with("empty_timed_run,1,4,0,-1,0,")) << lines[7];
  EXPECT_TRUE(lines[14].starts_with("empty_timed_run,4,4,0,-1,1,")) << lines[14];
  EXPECT_EQ(backend.calls.back(), "empty ranks=4");
}

// The runbook's smoke test (tests/CMakeLists.txt collsim_cuda_smoke), exactly: with 2 GPUs and
// straggler 1 only rank 0 is ready, so the ReduceScatter micro-benchmark cannot run; NCCL would
// fail, so the driver must skip it and say so, not stop the run.
TEST(MeasurementDriver, TwoGpusMicroAllSkipsTheReduceScatter) {
  const RunOptions options = options_from({"--algo", "ring,nccl", "--gpus", "2", "--sizes", "4KiB,1MiB", "--delays",
                                           "0,100us", "--iters", "2", "--warmup", "1", "--micro", "all"});
  testing::HostMeasurementBackend backend;
  std::ostringstream csv;
  std::ostringstream micro;
  std::ostringstream log;
  const DriverSummary summary = run_measurements(options, backend, &csv, &micro, log);
  EXPECT_TRUE(summary.ok());
  ASSERT_EQ(summary.skipped.size(), 1u);
  EXPECT_NE(summary.skipped[0].find("reduce_scatter_nccl: skipped, a ReduceScatter needs 2 ready ranks"),
            std::string::npos)
      << summary.skipped[0];
  EXPECT_NE(log.str().find("reduce_scatter_nccl: skipped"), std::string::npos);
  for (const std::string& call : backend.calls) EXPECT_FALSE(call.starts_with("reduce_scatter")) << call;
  EXPECT_EQ(lines_of(csv.str()).size(), 1u + 2u * 2u * 2u * 2u);
  EXPECT_EQ(lines_of(micro.str()).size(), 1u + 2u * (2u + 2u + 2u)) << "p2p, reduce_kernel over 2 sizes; empty n=1,2";
}

TEST(MeasurementDriver, GatedByDefaultBothOnRequest) {
  RunOptions options = options_from({"--algo", "ring", "--gpus", "2", "--sizes", "64B", "--iters", "2", "--warmup",
                                     "1"});
  options.nccl_algo = "allreduce:tree";
  options.nccl_proto = "Simple";
  testing::HostMeasurementBackend backend;
  std::ostringstream csv;
  std::ostringstream log;
  run_measurements(options, backend, &csv, nullptr, log);
  EXPECT_EQ(backend.gated, (std::vector<bool>{true, true, true}));
  auto lines = lines_of(csv.str());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[1].find(",gated,allreduce:tree,Simple,"), std::string::npos) << lines[1];

  options.launch = LaunchMode::Both;
  testing::HostMeasurementBackend both;
  std::ostringstream csv_both;
  run_measurements(options, both, &csv_both, nullptr, log);
  EXPECT_EQ(both.gated, (std::vector<bool>{true, false, true, false, true, false}));
  lines = lines_of(csv_both.str());
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_TRUE(lines[1].starts_with("ring,2,64,0,1,0,")) << lines[1];
  EXPECT_NE(lines[1].find(",gated,"), std::string::npos) << lines[1];
  EXPECT_TRUE(lines[2].starts_with("ring,2,64,0,1,0,")) << lines[2];
  EXPECT_NE(lines[2].find(",ungated,"), std::string::npos) << lines[2];
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
  EXPECT_TRUE(lines[1].starts_with("stragglar,8,1008,0,7,0,")) << "256 floats -> 252 = 9 units of 4 per chunk: "
                                                                << lines[1];
}

// --phase1 nccl with a size that is no multiple of 4 * 7 floats: rounded down, 16-byte aligned
// blocks, and the result (executed from the same plan the GPUs get) validates.
TEST(MeasurementDriver, StragglarPhaseOneNcclWithSizesNotDivisibleIntoAlignedBlocks) {
  std::string why;
  if (!testing::try_generate("stragglar", 8, Rank{0}, why)) GTEST_SKIP() << "stragglar: " << why;
  for (const char* straggler : {"7", "0"}) {
    const RunOptions options = options_from({"--algo", "stragglar", "--gpus", "8", "--straggler", straggler,
                                             "--sizes", "1000B,4100B,1MiB", "--iters", "1", "--warmup", "1"});
    testing::HostMeasurementBackend backend;
    std::ostringstream csv;
    std::ostringstream log;
    const DriverSummary summary = run_measurements(options, backend, &csv, nullptr, log);
    ASSERT_TRUE(summary.ok()) << summary.failures.front();
    const auto lines = lines_of(csv.str());
    ASSERT_EQ(lines.size(), 4u);
    // 250 floats -> 224; 1025 -> 1008; 262144 -> 262136 (multiples of 28).
    EXPECT_TRUE(lines[1].starts_with(fmt::format("stragglar,8,896,0,{},", straggler))) << lines[1];
    EXPECT_TRUE(lines[2].starts_with(fmt::format("stragglar,8,4032,0,{},", straggler))) << lines[2];
    EXPECT_TRUE(lines[3].starts_with(fmt::format("stragglar,8,1048544,0,{},", straggler))) << lines[3];
  }
  // Its own rounds need no rounding.
  const RunOptions rounds = options_from({"--algo", "stragglar", "--gpus", "8", "--phase1", "schedule", "--sizes",
                                          "1000B", "--iters", "1", "--warmup", "0"});
  testing::HostMeasurementBackend backend;
  std::ostringstream csv;
  std::ostringstream log;
  ASSERT_TRUE(run_measurements(rounds, backend, &csv, nullptr, log).ok());
  EXPECT_TRUE(lines_of(csv.str())[1].starts_with("stragglar,8,1000,0,7,")) << csv.str();
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
                                           "64B,128B", "--iters", "1", "--warmup", "0"});
  testing::HostMeasurementBackend backend;
  std::ostringstream micro;
  std::ostringstream log;
  const DriverSummary summary = run_measurements(options, backend, nullptr, &micro, log);
  EXPECT_TRUE(summary.ok());
  ASSERT_EQ(summary.skipped.size(), 1u);
  // 7 blocks of whole 16-byte units: 28 floats at least.
  EXPECT_NE(summary.skipped[0].find("size 64 B skipped (fewer than 28 floats)"), std::string::npos)
      << summary.skipped[0];
  const auto lines = lines_of(micro.str());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(lines[1].starts_with("reduce_scatter_nccl,7,112,")) << lines[1];
}

TEST(MeasurementDriver, Helpers) {
  EXPECT_EQ(element_count(1001, 1, "x"), 250u);
  EXPECT_EQ(element_count(16, 3, "x"), 3u);
  EXPECT_THROW(element_count(3, 1, "x"), ConfigError);
  EXPECT_THROW(element_count(8, 7, "x"), ConfigError);

  RunOptions options;
  const Schedule two_phase = testing::make_two_phase_straggler_schedule(4);
  const Schedule ring = generate_schedule("ring", AlgorithmOptions{4, {}, 0});
  EXPECT_EQ(lowering_options_for(options, two_phase, 7).nccl_reduce_scatter_phase, "reduce_scatter");
  EXPECT_EQ(lowering_options_for(options, two_phase, 7).count, 7u);
  EXPECT_EQ(lowering_options_for(options, ring, 7).nccl_reduce_scatter_phase, "");
  options.phase1 = Phase1Mode::Schedule;
  EXPECT_EQ(lowering_options_for(options, two_phase, 7).nccl_reduce_scatter_phase, "");
}

TEST(MeasurementDriver, GlobalNcclAlgoIsRejectedWhenTheRunIssuesAReduceScatter) {
  std::string why;
  if (!testing::try_generate("stragglar", 8, std::nullopt, why)) GTEST_SKIP() << "stragglar: " << why;
  const auto with_algo = [](std::vector<std::string> args, std::string algo) {
    RunOptions options = parse_run_options(args);
    options.nccl_algo = std::move(algo);
    return options;
  };
  EXPECT_NO_THROW(check_schedules(with_algo({"--algo", "ring,nccl"}, "Tree")));
  EXPECT_NO_THROW(check_schedules(with_algo({"--algo", "stragglar,nccl"}, "allreduce:tree")));
  EXPECT_NO_THROW(check_schedules(with_algo({"--algo", "stragglar", "--phase1", "schedule"}, "Tree")));
  try {
    check_schedules(with_algo({"--algo", "stragglar,nccl"}, "Tree"));
    FAIL() << "NCCL_ALGO=Tree with StragglAR's ncclReduceScatter was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("NCCL_ALGO=Tree applies to every NCCL collective"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("NCCL_ALGO=allreduce:Tree"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_schedules(with_algo({"--algo", "none", "--micro", "reduce_scatter"}, "Ring")), ConfigError);

  const RunOptions per_collective = with_algo({"--algo", "nccl"}, "allreduce:tree");
  EXPECT_NO_THROW(check_nccl_algo_version(per_collective, "2.24.3"));
  EXPECT_NO_THROW(check_nccl_algo_version(per_collective, "2.28.9"));
  EXPECT_THROW(check_nccl_algo_version(per_collective, "2.23.4"), ConfigError);
  EXPECT_NO_THROW(check_nccl_algo_version(with_algo({"--algo", "nccl"}, "Tree"), "2.18.1"));
}

TEST(MeasurementDriver, CheckSchedulesReportsUnsupportedCombinations) {
  EXPECT_NO_THROW(check_schedules(options_from({"--algo", "ring,nccl", "--gpus", "5"})));
  // A hierarchical algorithm's constraint on n needs a node size, which an 8-GPU server run of
  // collsim-cuda has not got (one node, no topology): the check refuses it before any GPU work,
  // naming the algorithm. (One that also reduces in the switch, nvls_tree, is refused for that
  // first, with a ConfigError.)
  bool found = false;
  for (const auto& info : all_algorithms()) {
    if (!info.hierarchical) continue;
    found = true;
    try {
      check_schedules(options_from({"--algo", std::string(info.name), "--gpus", "8"}));
      ADD_FAILURE() << info.name << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(info.name), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(found) << "the table has a hierarchical algorithm";
}

}  // namespace
}  // namespace collsim::cuda_validate
