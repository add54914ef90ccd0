// `collsim simulate --spread K`: K more runs with every arrival moved by at most 1 ps, and how
// far their finish times are from the run's. A well-conditioned run moves by about as much as
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

// Four leaves of eight nodes, rail-optimized, 4:1 uplinks: StragglAR's 128 GPUs contend enough
// that a 1 ps move grows to ~1e-5 of the run within its rounds (1 s for three runs).
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

TEST(SimulateSpread, OffByDefault) {
  const auto r = run({"simulate", "--algo", "ring", "-n", "8", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"spread_runs\":0,\"spread\":null,\"spread_s\":null"), std::string::npos) << r.out;
  EXPECT_EQ(run({"simulate", "--algo", "ring", "-n", "8"}).out.find("spread"), std::string::npos);
}

TEST(SimulateSpread, AWellConditionedRunMovesByAboutWhatItsInputsMoved) {
  const auto r = run({"simulate", "--algo", "stragglar", "-n", "64", "--topology", "cluster_h100_1024_2to1", "--delay",
                      "1ms", "--spread", "2", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json_field(r.out, "spread_runs"), 2);
  const double spread = json_field(r.out, "spread");
  EXPECT_GT(spread, 0.0);  // the moved runs did run with other arrivals
  EXPECT_LT(spread, 1e-9);
  EXPECT_GT(json_field(r.out, "spread_s"), 0.0);
  EXPECT_LE(json_field(r.out, "spread_s"), 1.5e-12);
  // The run itself is the one without --spread.
  const auto plain = run({"simulate", "--algo", "stragglar", "-n", "64", "--topology", "cluster_h100_1024_2to1", "--delay",
                          "1ms", "--json"});
  EXPECT_EQ(json_field(plain.out, "time_s"), json_field(r.out, "time_s"));
}

TEST(SimulateSpread, AContendedRunThatAmplifiesDifferencesSaysSo) {
  test::TempDir dir;
  const std::string topology = (dir.path() / "contended.yaml").string();
  std::ofstream(topology) << kContendedCluster;
  const auto json = run({"simulate", "--algo", "stragglar", "-n", "128", "--topology", topology, "--delay", "30ms",
                         "--spread", "2", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_GT(json_field(json.out, "spread"), 1e-7);
  const auto text = run({"simulate", "--algo", "stragglar", "-n", "128", "--topology", topology, "--delay", "30ms",
                         "--spread", "2"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("the model amplifies tiny differences here"), std::string::npos) << text.out;
}

TEST(SimulateSpread, BadValuesAreOneLineErrorsNamingTheOption) {
  for (const char* bad : {"-1", "two", "1001"}) {
    const auto r = run({"simulate", "--algo", "ring", "-n", "8", "--spread", bad});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("--spread"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
  }
  const auto trace = run({"simulate", "--algo", "ring", "--arrival-trace",
                          std::string(COLLSIM_TEST_DATA_DIR) + "/arrivals/small.csv", "--spread", "2"});
  EXPECT_EQ(trace.code, 2);
  EXPECT_NE(trace.err.find("--spread 2 applies to one run"), std::string::npos) << trace.err;
}

}  // namespace
}  // namespace collsim
