// `collsim simulate --sensitivity K`: K more runs with every arrival moved by at most 1 ps, and
// how far their finish times are from the run's. A well-conditioned run moves by about as much as
// its inputs did; a contended one whose rounds amplify differences moves by orders of magnitude
// more and says so (README "Exact, where the model is").
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli_test_support.hpp"
#include "test_support.hpp"

namespace collsim {
namespace {

using test::json_field;
using test::run;

// Two leaves per rail of eight nodes, rail-optimized, 4:1 uplinks: StragglAR's 128 GPUs contend
// enough that some 1 ps moves grow to ~1e-5 of the run (measured: three draws in six do, the
// others break no tie and stay at ~1 ps, so the test takes six).
constexpr const char* kContendedCluster = R"(kind: cluster
description: 16 x 8 GPUs, rail-optimized, 4:1
n: 128
gamma: 0
cluster:
  gpus_per_node: 8
  nvlink_bandwidth: 450GBps
  nvlink_latency: 3us
  nic_bandwidth: 400Gbps
  network_latency: 10us
  nodes_per_leaf: 8
  oversubscription: 4
  rail_optimized: true
)";

TEST(SimulateSensitivity, OffByDefault) {
  const auto r = run({"simulate", "--algo", "ring", "-n", "8", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"sensitivity_runs\":0,\"sensitivity\":null,\"sensitivity_s\":null"), std::string::npos) << r.out;
  EXPECT_EQ(run({"simulate", "--algo", "ring", "-n", "8"}).out.find("sensitivity"), std::string::npos);
}

TEST(SimulateSensitivity, AWellConditionedRunMovesByAboutWhatItsInputsMoved) {
  const auto r = run({"simulate", "--algo", "stragglar", "-n", "64", "--topology", "cluster_h100_1024_2to1", "--delay",
                      "1ms", "--sensitivity", "2", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json_field(r.out, "sensitivity_runs"), 2);
  const double relative = json_field(r.out, "sensitivity");
  EXPECT_GT(relative, 0.0);  // the moved runs did run with other arrivals
  EXPECT_LT(relative, 1e-9);
  EXPECT_GT(json_field(r.out, "sensitivity_s"), 0.0);
  EXPECT_LE(json_field(r.out, "sensitivity_s"), 1.5e-12);
  // The run itself is the one without --sensitivity.
  const auto plain = run({"simulate", "--algo", "stragglar", "-n", "64", "--topology", "cluster_h100_1024_2to1", "--delay",
                          "1ms", "--json"});
  EXPECT_EQ(json_field(plain.out, "time_s"), json_field(r.out, "time_s"));
}

// A short run moves by more than 1e-9 of itself when its arrivals move by 1 ps, without any
// amplification: what counts is how far the moves grew past the nudge.
TEST(SimulateSensitivity, AShortRunIsNotCalledAmplifying) {
  const auto r = run({"simulate", "--algo", "ring", "-n", "8", "--size", "1MiB", "--sensitivity", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("sensitivity: 3 runs"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("amplifies"), std::string::npos) << r.out;
}

TEST(SimulateSensitivity, AContendedRunThatAmplifiesDifferencesSaysSo) {
  test::TempDir dir;
  const std::string topology = (dir.path() / "contended.yaml").string();
  std::ofstream(topology) << kContendedCluster;
  const auto text = run({"simulate", "--algo", "stragglar", "-n", "128", "--topology", topology, "--delay", "30ms",
                         "--sensitivity", "6"});
  ASSERT_EQ(text.code, 0) << text.err;
  const auto at = text.out.find("finish up to ");
  ASSERT_NE(at, std::string::npos) << text.out;
  EXPECT_GT(std::stod(text.out.substr(at + 13)), 1e-7) << text.out;
  EXPECT_NE(text.out.find("the model amplifies tiny differences here"), std::string::npos) << text.out;
}

TEST(SimulateSensitivity, BadValuesAndEnginesAreOneLineErrorsNamingTheOption) {
  for (const char* bad : {"-1", "two", "1001", "1e3"}) {
    const auto r = run({"simulate", "--algo", "ring", "-n", "8", "--sensitivity", bad});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("--sensitivity"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
  }
  const std::string trace = std::string(COLLSIM_TEST_DATA_DIR) + "/arrivals/small.csv";
  const auto iterations = run({"simulate", "--algo", "ring", "--arrival-trace", trace, "--sensitivity", "2"});
  EXPECT_EQ(iterations.code, 2);
  EXPECT_NE(iterations.err.find("--sensitivity 2 measures one run"), std::string::npos) << iterations.err;
  EXPECT_EQ(run({"simulate", "--algo", "ring", "--arrival-trace", trace, "--sensitivity", "0"}).code, 0);
  const auto closed = run({"simulate", "--algo", "ring", "-n", "8", "--engine", "closed_form", "--sensitivity", "2"});
  EXPECT_EQ(closed.code, 2);
  EXPECT_NE(closed.err.find("--sensitivity 2"), std::string::npos) << closed.err;
  EXPECT_NE(closed.err.find("closed_form"), std::string::npos) << closed.err;
}

}  // namespace
}  // namespace collsim
