// `collsim calibrate` end to end: the measured-vs-predicted plot, --topology, and the per-class
// model used by `collsim simulate`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "collsim/experiments/cli.hpp"
#include "collsim/experiments/plot_script.hpp"
#include "cli_test_support.hpp"

namespace collsim {
namespace {

using test::CliRun;
using test::run;

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("collsim_calibrate_cli_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

const std::string kReduceScatter4 = COLLSIM_TEST_DATA_DIR "/nccl-tests/h100-nvswitch-4gpu-reducescatter.txt";
const std::string kAllGather4 = COLLSIM_TEST_DATA_DIR "/nccl-tests/h100-nvswitch-4gpu-allgather.txt";

TEST(CalibrateCli, NoPlotWritesNoFigure) {
  const fs::path dir = fresh_dir("noplot");
  const auto r = run({"calibrate", kReduceScatter4, kAllGather4, "--no-gamma", "--no-plot", "--out", (dir / "m.yaml").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "m_fit.csv"));
  EXPECT_FALSE(fs::exists(dir / "m_fit.png"));
  EXPECT_FALSE(fs::exists(dir / "m_fit.svg"));
  fs::remove_all(dir);
}

// The CSV's path is checked with the model's, before anything is written: a directory in the
// way of the default <MODEL>_fit.csv left the model written and failed on "cannot rename",
// and --csv naming the --out file replaced the model by the CSV with exit code 0.
TEST(CalibrateCli, CsvPathIsCheckedBeforeTheModelIsWritten) {
  const fs::path dir = fresh_dir("csvpath");
  fs::create_directories(dir / "m_fit.csv");
  CliRun r = run({"calibrate", kAllGather4, "--no-plot", "--out", (dir / "m.yaml").string()});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("calibrate: --csv (default: <MODEL>_fit.csv beside --out) '" + (dir / "m_fit.csv").string() +
                       "' is a directory"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "m.yaml"));
  r = run({"calibrate", kAllGather4, "--no-plot", "--out", (dir / "same.yaml").string(), "--csv",
           (dir / "." / "same.yaml").string()});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("is the --out model file"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "same.yaml"));
  // Nor may an output replace an input log (the model or the CSV over the measurements).
  const fs::path log = dir / "ag.txt";
  fs::copy_file(kAllGather4, log);
  r = run({"calibrate", log.string(), "--no-plot", "--out", log.string()});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("calibrate: --out '" + log.string() + "' is the input '" + log.string() + "'"), std::string::npos)
      << r.err;
  r = run({"calibrate", log.string(), "--no-plot", "--out", (dir / "m.yaml").string(), "--csv", log.string()});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("calibrate: --csv '" + log.string() + "' is the input"), std::string::npos) << r.err;
  r = run({"calibrate", log.string(), "--no-plot", "--csv", log.string()});
  EXPECT_EQ(r.code, 2) << r.out;
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  std::ifstream original(kAllGather4);
  std::stringstream expected;
  expected << original.rdbuf();
  EXPECT_EQ(text.str(), expected.str());
  fs::remove_all(dir);
}

// --time's help named min|oop|ip, spellings the option refused ("time: unknown value 'ip'").
TEST(CalibrateCli, TimeOptionHelpMatchesWhatItReads) {
  const CliRun help = run({"calibrate", "--help"});
  EXPECT_NE(help.out.find("--time min|out_of_place|in_place"), std::string::npos) << help.out;
  const CliRun bad = run({"calibrate", kAllGather4, "--no-plot", "--time", "ip"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("calibrate: --time 'ip' is not one of min, out_of_place, in_place"), std::string::npos) << bad.err;
  EXPECT_EQ(run({"calibrate", kAllGather4, "--no-plot", "--time", "in_place"}).code, 0);
}

// Too few sizes to fit: the message names --regimes (when given) and the inputs; it said only
// "a fit with 3 regime(s) needs at least 12 distinct sizes; the data have 4".
TEST(CalibrateCli, TooFewSizesNameTheOptionAndTheInputs) {
  const std::string sendrecv = COLLSIM_TEST_DATA_DIR "/nccl-tests/a100-8gpu-sendrecv-partial.txt";
  const CliRun three = run({"calibrate", sendrecv, "--no-plot", "--regimes", "3"});
  EXPECT_EQ(three.code, 2);
  EXPECT_NE(three.err.find("calibrate: --regimes 3: the rows to fit (a100-8gpu-sendrecv-partial.txt) have 4 distinct "
                           "sizes; a fit with 3 regimes needs at least 12"),
            std::string::npos)
      << three.err;
  EXPECT_EQ(run({"calibrate", sendrecv, "--no-plot"}).code, 0);
}

TEST(CalibrateCli, PlotsMeasuredVsPredictedNextToTheModel) {
  if (!plot_python_has_module("matplotlib")) GTEST_SKIP() << plot_python() << " has no matplotlib";
  const fs::path dir = fresh_dir("plot");
  // The CSV goes elsewhere; the figure still lands next to the model, named after it.
  fs::create_directories(dir / "tables");
  const auto r = run({"calibrate", kReduceScatter4, kAllGather4, "--no-gamma", "--out", (dir / "box.yaml").string(),
                      "--csv", (dir / "tables" / "fit_table.csv").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_TRUE(fs::exists(dir / "box_fit.png")) << r.out;
  EXPECT_GT(fs::file_size(dir / "box_fit.png"), 10000u);
  EXPECT_GT(fs::file_size(dir / "box_fit.svg"), 10000u);
  EXPECT_EQ(r.out.find("note: no plot"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(CalibrateCli, TopologyOptionAndPerClassModelInSimulate) {
  const fs::path dir = fresh_dir("topology");
  // Single-node logs on a two-class cluster: nvlink is fitted, network is reported unidentified.
  std::ofstream(dir / "pair.yaml") << "kind: cluster\ncluster: {gpus_per_node: 4}\n";
  const auto r = run({"calibrate", kReduceScatter4, kAllGather4, "--no-gamma", "--no-plot", "--topology",
                      (dir / "pair.yaml").string(), "--out", (dir / "m.yaml").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("link classes: nvlink, network"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("network: not identified"), std::string::npos) << r.out;
  std::ifstream in(dir / "m.yaml");
  const std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(yaml.find("unidentified_classes: [\"network\"]"), std::string::npos) << yaml;
  // On one node the model applies; across nodes it refuses to guess the network.
  const auto one_node = run({"simulate", "--algo", "ring", "-n", "4", "--model", (dir / "m.yaml").string(), "--json"});
  EXPECT_EQ(one_node.code, 0) << one_node.err;
  const auto cluster = run({"simulate", "--algo", "ring", "-n", "8", "--topology", (dir / "pair.yaml").string(),
                            "--model", (dir / "m.yaml").string()});
  EXPECT_EQ(cluster.code, 2);
  EXPECT_NE(cluster.err.find("link class 'network'"), std::string::npos) << cluster.err;
  // The default topology is nvswitch, and a bad --topology is a one-line error.
  const auto bad = run({"calibrate", kReduceScatter4, "--no-plot", "--topology", "no_such_fabric"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("no_such_fabric"), std::string::npos) << bad.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace collsim
