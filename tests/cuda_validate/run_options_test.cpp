#include <gtest/gtest.h>

#include "collsim/cuda_validate/run_options.hpp"
#include "collsim/models/error.hpp"

namespace collsim::cuda_validate {
namespace {

RunOptions parse(std::vector<std::string> args) { return parse_run_options(args); }

// Expects a ConfigError whose message contains `needle`.
void expect_rejected(std::vector<std::string> args, const std::string& needle) {
  try {
    parse_run_options(args);
    ADD_FAILURE() << "accepted: " << ::testing::PrintToString(args);
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(RunOptions, TheRunbookCommandLine) {
  const RunOptions o = parse({"--algo", "stragglar,ring,recursive_halving_doubling,nccl", "--gpus", "8", "--sizes",
                              "1MiB..4GiB", "--delays", "0,1ms,5ms", "--straggler", "7", "--iters", "20", "--warmup",
                              "5", "--out", "measurements.csv"});
  EXPECT_EQ(o.algorithms, (std::vector<std::string>{"stragglar", "ring", "recursive_halving_doubling", "nccl"}));
  EXPECT_EQ(o.gpus, 8u);
  ASSERT_EQ(o.sizes_bytes.size(), 13u);
  EXPECT_EQ(o.sizes_bytes.front(), 1u << 20);
  EXPECT_EQ(o.sizes_bytes.back(), 4ull << 30);
  EXPECT_EQ(o.delays_s, (std::vector<double>{0.0, 1e-3, 5e-3}));
  EXPECT_EQ(o.straggler, 7u);
  EXPECT_EQ(o.iters, 20u);
  EXPECT_EQ(o.warmup, 5u);
  EXPECT_EQ(o.out, "measurements.csv");
  EXPECT_EQ(o.micro_out, "measurements_micro.csv");
  EXPECT_EQ(o.phase1, Phase1Mode::Nccl);
  EXPECT_TRUE(o.micro.empty());
  EXPECT_FALSE(o.help);
}

TEST(RunOptions, Defaults) {
  const RunOptions o = parse({"--gpus=4"});
  EXPECT_EQ(o.gpus, 4u);
  EXPECT_EQ(o.straggler, 3u) << "default straggler is the last GPU";
  EXPECT_EQ(o.algorithms.size(), 4u);
  EXPECT_EQ(o.sizes_bytes.size(), 11u);  // 1MiB..1GiB
  EXPECT_EQ(o.delays_s, (std::vector<double>{0.0}));
  EXPECT_EQ(o.launch, LaunchMode::Gated) << "host enqueue time is not measured by default";
  EXPECT_EQ(o.timeout_s, 60.0);
}

TEST(RunOptions, OtherFlags) {
  const RunOptions o = parse({"--algo=none", "--micro", "all", "--phase1", "schedule", "--no-gate", "--out", "-"});
  EXPECT_TRUE(o.algorithms.empty());
  EXPECT_EQ(o.micro.size(), 4u);
  EXPECT_EQ(o.micro.back(), MicroBenchmark::Empty);
  EXPECT_EQ(o.phase1, Phase1Mode::Schedule);
  EXPECT_EQ(o.launch, LaunchMode::Ungated);
  EXPECT_EQ(parse({"--launch", "both"}).launch, LaunchMode::Both);
  EXPECT_EQ(parse({"--no-gate", "--gate"}).launch, LaunchMode::Gated);
  EXPECT_EQ(parse({"--timeout", "2min"}).timeout_s, 120.0);
  EXPECT_EQ(micro_benchmark_name(MicroBenchmark::Empty), "empty_timed_run");
  EXPECT_EQ(o.out, "-");
  EXPECT_EQ(parse({"--micro", "p2p,reduce"}).micro,
            (std::vector<MicroBenchmark>{MicroBenchmark::P2p, MicroBenchmark::Reduce}));
  EXPECT_TRUE(parse({"--help"}).help);
  EXPECT_EQ(micro_benchmark_name(MicroBenchmark::ReduceScatter), "reduce_scatter_nccl");
  EXPECT_EQ(parse({"--out", "runs/a.csv"}).micro_out, "runs/a_micro.csv");
  EXPECT_EQ(parse({"--out", "runs/a"}).micro_out, "runs/a_micro.csv");
  EXPECT_EQ(parse({"--out", "a.csv", "--micro-out", "m.csv"}).micro_out, "m.csv");
  EXPECT_EQ(parse({"--algo", "none", "--micro", "p2p", "--out", "-"}).micro_out, "-");
  EXPECT_NE(run_options_usage().find("Exit codes"), std::string::npos);
}

TEST(RunOptions, SizeLists) {
  EXPECT_EQ(parse_size_list("4B"), (std::vector<std::uint64_t>{4}));
  EXPECT_EQ(parse_size_list("1KiB..4KiB"), (std::vector<std::uint64_t>{1024, 2048, 4096}));
  EXPECT_EQ(parse_size_list("1KiB..5KiB"), (std::vector<std::uint64_t>{1024, 2048, 4096}));
  EXPECT_EQ(parse_size_list("1KiB..64KiB:4"), (std::vector<std::uint64_t>{1024, 4096, 16384, 65536}));
  EXPECT_EQ(parse_size_list("8B,1MB"), (std::vector<std::uint64_t>{8, 1000000}));
  EXPECT_EQ(parse_size_list("1MiB..1MiB"), (std::vector<std::uint64_t>{1u << 20}));
}

TEST(RunOptions, RejectsUnknownAlgorithm) {
  expect_rejected({"--algo", "ring,bogus"}, "bogus");
  expect_rejected({"--algo", "ring,,nccl"}, "empty name");
}

// collsim-cuda issues GPU-to-GPU transfers only: a switch reduction is refused up front, naming
// the algorithm and what is missing.
TEST(RunOptions, RejectsSwitchReductions) {
  expect_rejected({"--algo", "ring,nvls"}, "nvls reduces in the NVSwitch");
  expect_rejected({"--algo", "nvls"}, "multimem");
}

TEST(RunOptions, RejectsBadSizes) {
  expect_rejected({"--sizes", "abc"}, "--sizes");
  expect_rejected({"--sizes", "1XB"}, "unknown unit");
  expect_rejected({"--sizes", "0"}, "at least 4B");
  expect_rejected({"--sizes", "-4"}, "--sizes");
  expect_rejected({"--sizes", "1001"}, "multiple of 4");
  expect_rejected({"--sizes", "2.5B"}, "whole number");
  expect_rejected({"--sizes", "4GiB..1MiB"}, "backwards");
  expect_rejected({"--sizes", "1MiB..4GiB:1"}, "at least 2");
  expect_rejected({"--sizes", "1MiB..4GiB:x"}, "range factor");
  expect_rejected({"--sizes", "1MiB,"}, "--sizes");
  expect_rejected({"--sizes", "4B..1TB,4B..1TB,4B..1TB,4B..1TB,4B..1TB,4B..1TB,4B..1TB"}, "more than");
}

TEST(RunOptions, RejectsGpusOutOfRange) {
  expect_rejected({"--gpus", "1"}, "outside 2..8");
  expect_rejected({"--gpus", "9"}, "outside 2..8");
  expect_rejected({"--gpus", "0"}, "outside 2..8");
  expect_rejected({"--gpus", "-2"}, "not a non-negative integer");
  expect_rejected({"--gpus", "four"}, "not a non-negative integer");
  expect_rejected({"--gpus", "8x"}, "not a non-negative integer");
}

TEST(RunOptions, RejectsStragglerOutOfRange) {
  expect_rejected({"--gpus", "4", "--straggler", "4"}, "out of range for --gpus 4");
  expect_rejected({"--straggler", "8"}, "out of range for --gpus 8");
  expect_rejected({"--straggler", "-1"}, "not a non-negative integer");
  EXPECT_EQ(parse({"--straggler", "0", "--gpus", "2"}).straggler, 0u) << "order of flags does not matter";
}

TEST(RunOptions, RejectsOtherBadInput) {
  expect_rejected({"--delays", "5ms,-1ms"}, "negative");
  expect_rejected({"--delays", "20"}, "forget a unit");
  expect_rejected({"--delays", "1 parsec"}, "unknown unit");
  expect_rejected({"--iters", "0"}, "outside 1..1000000");
  expect_rejected({"--warmup", "x"}, "--warmup");
  expect_rejected({"--phase1", "ring"}, "neither");
  expect_rejected({"--micro", "latency"}, "unknown micro-benchmark");
  expect_rejected({"--frobnicate", "1"}, "unknown option '--frobnicate'");
  expect_rejected({"--gpus"}, "needs a value");
  expect_rejected({"stragglar"}, "unexpected argument");
  expect_rejected({"--out="}, "empty path");
  expect_rejected({"--micro-out="}, "empty path");
  expect_rejected({"--out", "-", "--micro", "all"}, "standard output");
  expect_rejected({"--algo", "none"}, "nothing to run");
  expect_rejected({"--launch", "sometimes"}, "--launch: 'sometimes' is none of");
  expect_rejected({"--timeout", "0.5s"}, "--timeout: '0.5s' is outside 1s..3600s");
}

}  // namespace
}  // namespace collsim::cuda_validate
