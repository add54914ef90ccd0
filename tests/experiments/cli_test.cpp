#include "collsim/experiments/cli.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <yaml-cpp/yaml.h>
#include "cli_test_support.hpp"
#include "collsim/models/formats/model_file.hpp"
#include "test_support.hpp"

namespace collsim {
namespace {

using test::CliRun;
using test::json_field;
using test::run;

TEST(Cli, HelpForEveryCommand) {
  for (const char* cmd : {"schedule", "verify", "simulate", "calibrate", "run", "advise", "algorithms"}) {
    const auto r = run({cmd, "--help"});
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find("usage: collsim"), std::string::npos) << cmd;
  }
  EXPECT_EQ(run({"--help"}).code, 0);
  EXPECT_EQ(run({}).code, 2);
}

TEST(Cli, BadInputIsOneLineAndExitCode2) {
  const std::vector<std::vector<std::string>> bad{
      {"frobnicate"},
      {"schedule", "--algo", "rnig", "-n", "4"},
      {"schedule", "--algo", "ring", "-n", "1"},
      {"schedule", "--algo", "ring", "-n", "-4"},
      {"schedule", "--algo", "ring"},
      {"schedule", "--algo", "ring", "-n", "4", "--format", "xml"},
      {"schedule", "--algo", "ring", "-n", "4", "--bogus"},
      {"schedule", "--algo", "ring", "-n", "4", "--straggler", "4"},
      {"simulate", "--algo", "ring", "-n", "4", "--size", "-1GiB"},
      {"simulate", "--algo", "ring", "-n", "4", "--delay", "-5ms"},
      {"simulate", "--algo", "ring", "-n", "4", "--bandwidth", "fast"},
      {"simulate", "--algo", "ring", "-n", "4", "--start", "lazy"},
      {"simulate", "--algo", "ring", "-n", "4", "--engine", "warp"},
      {"verify", "--algo", "ring", "--n", "9..3"},
      {"simulate", "--algo", "ring", "-n", "4", "--topology", "nosuchfabric"},
      {"simulate", "--algo", "ring", "-n", "4", "--stragglers", "9:1ms"},
      {"simulate", "--algo", "ring", "-n", "4", "--distribution", "lognormal:median=5ms,mean=1ms"},
      {"simulate", "--algo", "ring", "-n", "4", "--model", "/nonexistent/model.yaml"},
      {"simulate", "--algo", "ring", "-n", "16", "--topology", "dgx1"},
      {"calibrate", "/nonexistent/log.txt"},
      {"calibrate", COLLSIM_TEST_DATA_DIR "/nccl-tests/bad-empty.txt"},
      {"calibrate", COLLSIM_TEST_DATA_DIR "/nccl-tests/bad-truncated-row.txt"},
      {"calibrate", COLLSIM_TEST_DATA_DIR "/nccl-tests/h100-nvswitch-4gpu-allgather.txt", "--regimes", "5"},
  };
  for (const auto& args : bad) {
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << args[0] << " " << (args.size() > 1 ? args[1] : "") << ": " << r.err;
    EXPECT_EQ(r.err.find("collsim: error: "), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
  }
}

TEST(Cli, ErrorsNameTheValue) {
  EXPECT_NE(run({"simulate", "--algo", "ring", "-n", "4", "--delay", "-5ms"}).err.find("-5ms"), std::string::npos);
  EXPECT_NE(run({"schedule", "--algo", "ring", "-n", "4", "--straggler", "9"}).err.find("9"), std::string::npos);
}

TEST(Cli, ScheduleJsonHasTheDocumentedShape) {
  const auto r = run({"schedule", "--algo", "ring", "-n", "3", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* key : {"\"algorithm\":\"ring\"", "\"n\":3", "\"num_chunks\":3", "\"phases\":[", "\"name\":\"reduce_scatter\"",
                          "\"rounds\":[[", "\"src\":0", "\"dst\":1", "\"chunk_begin\":", "\"chunk_count\":1", "\"op\":\"reduce\"",
                          "\"op\":\"copy\""}) {
    EXPECT_NE(r.out.find(key), std::string::npos) << key;
  }
}

TEST(Cli, ScheduleStatsAndText) {
  const auto stats = run({"schedule", "--algo", "ring", "-n", "8", "--format", "stats"});
  ASSERT_EQ(stats.code, 0) << stats.err;
  EXPECT_NE(stats.out.find("\"transfers\":112"), std::string::npos) << stats.out;
  EXPECT_NE(stats.out.find("\"verified\":true"), std::string::npos);
  EXPECT_NE(stats.out.find("\"generate_s\":"), std::string::npos);
  const auto text = run({"schedule", "--algo", "ring", "-n", "4"});
  EXPECT_NE(text.out.find("0->1 +c3"), std::string::npos) << text.out;
}

TEST(Cli, SimulateEnginesAgreeAndReportTheDocumentedFields) {
  std::vector<double> times;
  for (const char* engine : {"closed_form", "replay", "simgrid"}) {
    const auto r = run({"simulate", "--algo", "stragglar", "-n", "8", "--delay", "5ms", "--engine", engine, "--json"});
    ASSERT_EQ(r.code, 0) << engine << ": " << r.err;
    for (const char* key : {"algorithm", "n", "size_bytes", "engine", "start", "time_s", "time_after_last_arrival_s",
                            "algbw_GBps", "busbw_GBps", "transfers", "wall_s", "hidden_delay_fraction", "finish_s"}) {
      EXPECT_NE(r.out.find(std::string("\"") + key + "\":"), std::string::npos) << key;
    }
    times.push_back(json_field(r.out, "time_s"));
  }
  EXPECT_NEAR(times[1] / times[0], 1.0, 1e-9);
  EXPECT_NEAR(times[2] / times[0], 1.0, 1e-9);
  // StragglAR with 5 ms of delay at n = 8: max(d, T_RS) + T_SAR, T_SAR = 9 (alpha + s/7 beta).
  const double chunk_s = 3e-6 + (1073741824.0 / 7) / (450.0 * 1073741824.0);
  EXPECT_NEAR(times[0], 5e-3 + 9 * chunk_s, 1e-12);
}

// --reshare-interval: replay's approximate mode, recorded in the JSON; 0 (the default) is the
// exact engine; a value without a unit or below 0 is one error line naming the option.
TEST(Cli, SimulateReshareInterval) {
  const auto time_of = [](std::initializer_list<std::string> extra) {
    std::vector<std::string> args{"simulate", "--algo", "stragglar", "-n", "64", "--topology", "cluster_h100_1024_2to1",
                                  "--delay", "1ms", "--json"};
    args.insert(args.end(), extra);
    const auto r = run(args);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("\"reshare_interval_s\":"), std::string::npos) << r.out;
    return std::make_pair(json_field(r.out, "time_s"), json_field(r.out, "reshare_interval_s"));
  };
  const auto exact = time_of({});
  EXPECT_EQ(exact.second, 0.0);
  EXPECT_EQ(time_of({"--reshare-interval", "0"}).first, exact.first);
  const auto approx = time_of({"--reshare-interval", "100ns"});
  EXPECT_DOUBLE_EQ(approx.second, 100e-9);
  EXPECT_NEAR(approx.first / exact.first, 1.0, 1e-3);
  const auto other = run({"simulate", "--algo", "ring", "-n", "8", "--engine", "closed_form", "--reshare-interval", "1us"});
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.err.find("--reshare-interval 1us"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("closed_form"), std::string::npos) << other.err;
  for (const char* bad : {"5", "-1ns", "soon"}) {
    const auto r = run({"simulate", "--algo", "ring", "-n", "8", "--reshare-interval", bad});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("--reshare-interval"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
  }
}

// stragglar_online through the CLI: the agreement cost is an option (default 2 alpha), late
// ranks too, and bad values are one-line errors naming the option.
TEST(Cli, SimulateStragglarOnlineOptions) {
  const auto time_after = [](std::initializer_list<std::string> extra) {
    std::vector<std::string> args{"simulate", "--algo", "stragglar_online", "-n", "8", "--stragglers", "2:5ms", "--json"};
    args.insert(args.end(), extra);
    const auto r = run(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return json_field(r.out, "time_after_last_arrival_s");
  };
  const double chunk_s = 3e-6 + (1073741824.0 / 7) / (450.0 * 1073741824.0);
  EXPECT_NEAR(time_after({}), 6e-6 + 9 * chunk_s, 1e-12);
  EXPECT_NEAR(time_after({"--agreement-cost", "0"}), 9 * chunk_s, 1e-12);
  EXPECT_NEAR(time_after({"--agreement-cost", "1ms", "--engine", "closed_form"}), 1e-3 + 9 * chunk_s, 1e-12);
  EXPECT_GT(time_after({"--late-ranks", "3"}), 0.0);
  // The schedule was relabelled for rank 2, the one that arrived last (not n-1, for which it is built).
  const auto relabelled = run({"simulate", "--algo", "stragglar_online", "-n", "8", "--stragglers", "2:5ms", "--json"});
  ASSERT_EQ(relabelled.code, 0) << relabelled.err;
  EXPECT_EQ(json_field(relabelled.out, "expected_straggler"), 2.0) << relabelled.out;
  const auto bad_k = run({"simulate", "--algo", "stragglar_online", "-n", "8", "--late-ranks", "8"});
  EXPECT_EQ(bad_k.code, 2);
  EXPECT_NE(bad_k.err.find("late_ranks = 8"), std::string::npos) << bad_k.err;
  const auto bad_c = run({"simulate", "--algo", "stragglar_online", "-n", "8", "--agreement-cost", "-2us"});
  EXPECT_EQ(bad_c.code, 2);
  EXPECT_NE(bad_c.err.find("--agreement-cost"), std::string::npos) << bad_c.err;
  // Over a trace, the listing says the schedule follows the arrivals rather than naming a rank.
  const auto trace = run({"simulate", "--algo", "stragglar_online", "--arrival-trace",
                          std::string(COLLSIM_SOURCE_DIR) + "/configs/experiments/traces/rotating-4.csv"});
  ASSERT_EQ(trace.code, 0) << trace.err;
  EXPECT_NE(trace.out.find("relabelled at run time"), std::string::npos) << trace.out;
}

TEST(Cli, SimulateWritesATrace) {
  const std::string path = ::testing::TempDir() + "/collsim_cli_trace.json";
  const auto r = run({"simulate", "--algo", "ring", "-n", "4", "--delay", "1ms", "--trace", path});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(text.find("GPU 3"), std::string::npos);
}

TEST(Cli, CalibrateWritesAModel) {
  const std::string dir = ::testing::TempDir() + "/collsim_cli_calibrate";
  std::filesystem::create_directories(dir);  // calibrate --out does not create directories
  const auto r = run({"calibrate", COLLSIM_TEST_DATA_DIR "/nccl-tests/h100-nvswitch-4gpu-reducescatter.txt",
                      COLLSIM_TEST_DATA_DIR "/nccl-tests/h100-nvswitch-4gpu-allgather.txt", "--no-gamma", "--out",
                      dir + "/m.yaml"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("model written to"), std::string::npos) << r.out;
  const auto sim = run({"simulate", "--algo", "ring", "-n", "4", "--model", dir + "/m.yaml", "--json"});
  ASSERT_EQ(sim.code, 0) << sim.err;
}

TEST(Cli, VerifyReportsPassedAndFailed) {
  const auto r = run({"verify", "--algo", "ring", "--n", "2..5"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("4 passed, 0 failed"), std::string::npos) << r.out;
}

// A pair named twice is checked once: '-n 8,8' and 'ring,ring' are one pair, not two.
TEST(Cli, VerifyChecksARepeatedPairOnce) {
  const auto r = run({"verify", "--algo", "ring,ring", "--n", "4,8,8,2,4,3"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("4 passed, 0 failed"), std::string::npos) << r.out;
}

// Launch overheads: fused pays one per rank, p2p_rounds one per round (ring at n = 8: 14 rounds
// on every rank's path); none by default; the closed form refuses them.
TEST(Cli, ExecutionStylesChargeLaunches) {
  const auto time_of = [](const std::vector<std::string>& extra) {
    std::vector<std::string> args{"simulate", "--algo", "ring", "-n", "8", "--size", "1GiB", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run(args);
    EXPECT_EQ(r.code, 0) << r.err;
    const auto at = r.out.find("\"time_s\":");
    return std::stod(r.out.substr(at + 9));
  };
  const double plain = time_of({});
  EXPECT_NEAR(time_of({"--execution", "fused", "--launch", "5us"}) - plain, 5e-6, 1e-12);
  EXPECT_NEAR(time_of({"--execution", "p2p_rounds", "--launch", "5us"}) - plain, 14 * 5e-6, 1e-12);
  EXPECT_EQ(time_of({"--execution", "p2p_rounds"}), plain);
  const auto bad = run({"simulate", "--algo", "ring", "-n", "8", "--execution", "bogus"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--execution"), std::string::npos) << bad.err;
  // The closed form charges a fused launch and refuses per-round ones.
  EXPECT_NEAR(time_of({"--launch", "5us", "--engine", "closed_form"}) - plain, 5e-6, 1e-12);
  const auto formula =
      run({"simulate", "--algo", "ring", "-n", "8", "--execution", "p2p_rounds", "--launch", "5us", "--engine", "closed_form"});
  EXPECT_EQ(formula.code, 2);
  EXPECT_NE(formula.err.find("p2p_rounds"), std::string::npos) << formula.err;
}

// `nccl` runs what NCCL's tuner would pick and says what it picked; with the calibrated H100
// model the latency-bound sizes run LL and 1 GiB does not.
TEST(Cli, SimulateNcclSaysWhatItPicked) {
  const std::string model = std::string(COLLSIM_SOURCE_DIR) + "/configs/models/h100_nvswitch.yaml";
  const auto small = run({"simulate", "--algo", "nccl", "-n", "8", "--size", "64B", "--model", model, "--json"});
  ASSERT_EQ(small.code, 0) << small.err;
  EXPECT_NE(small.out.find("\"algorithm\":\"nccl\""), std::string::npos) << small.out;
  EXPECT_NE(small.out.find("\"nccl_protocol\":\"LL\""), std::string::npos) << small.out;
  const auto large = run({"simulate", "--algo", "nccl", "-n", "8", "--size", "1GiB", "--model", model, "--json"});
  ASSERT_EQ(large.code, 0) << large.err;
  EXPECT_EQ(large.out.find("\"nccl_protocol\":\"LL\""), std::string::npos) << large.out;
  // Its time is the chosen algorithm's under the chosen protocol's link and launch.
  const auto plain = run({"simulate", "--algo", "ring", "-n", "8", "--json"});
  EXPECT_NE(plain.out.find("\"nccl_algorithm\":null"), std::string::npos);
  const auto text = run({"simulate", "--algo", "nccl", "-n", "8"});
  EXPECT_NE(text.out.find("NCCL's choice: "), std::string::npos) << text.out;
}

// --gpus-per-thread G charges each launch G-1 more launches per extra GPU from the model (one
// thread launching on every GPU in turn); it needs a model and a G in 1..1024. advise moves the
// critical delay with it.
TEST(Cli, GpusPerThreadChargesTheModelsLaunchPerExtraGpu) {
  const std::string model = std::string(COLLSIM_SOURCE_DIR) + "/configs/models/h100_nvswitch.yaml";
  const auto time_of = [&](const char* gpus) {
    const auto r = run({"simulate", "--algo", "ring", "-n", "8", "--size", "1GiB", "--model", model,
                        "--gpus-per-thread", gpus, "--json"});
    EXPECT_EQ(r.code, 0) << r.err;
    return r.code == 0 ? YAML::Load(r.out)["time_s"].as<double>() : 0.0;
  };
  const ModelFile file = read_model_file(model);
  const double extra_s = driven_by_one_thread(file, 8).execution_for_size(1073741824.0).launch_s -
                         file.execution_for_size(1073741824.0).launch_s;
  EXPECT_GT(extra_s, 0.0);
  EXPECT_NEAR(time_of("8") - time_of("1"), extra_s, 1e-12);  // fused ring: one launch on its critical path
  const auto bare = run({"simulate", "--algo", "ring", "-n", "8", "--gpus-per-thread", "8"});
  EXPECT_EQ(bare.code, 2);
  EXPECT_NE(bare.err.find("--gpus-per-thread needs --model"), std::string::npos) << bare.err;
  const auto zero = run({"simulate", "--algo", "ring", "-n", "8", "--model", model, "--gpus-per-thread", "0"});
  EXPECT_NE(zero.err.find("--gpus-per-thread: 0 is not in 1..1024"), std::string::npos) << zero.err;
  const auto too_many = run({"simulate", "--algo", "ring", "-n", "4", "--model", model, "--gpus-per-thread", "8"});
  EXPECT_EQ(too_many.code, 2);
  EXPECT_NE(too_many.err.find("--gpus-per-thread: 8 is more than the run's 4 GPUs"), std::string::npos) << too_many.err;
  const auto advise_many = run({"advise", "-n", "4", "--size", "1GiB", "--model", model, "--gpus-per-thread", "8"});
  EXPECT_EQ(advise_many.code, 2);
  EXPECT_NE(advise_many.err.find("--gpus-per-thread: 8 is more than the run's 4 GPUs"), std::string::npos)
      << advise_many.err;
  // A spec's gpus_per_thread is checked against the spec's n; advise's -n replaces that n.
  test::TempDir dir;
  const auto spec = dir.path() / "g8.yaml";
  std::ofstream(spec) << "name: g\nalgorithms: [ring]\nn: 8\nlink: {model: " << model << "}\ngpus_per_thread: 8\n";
  const auto spec_many = run({"advise", "--spec", spec.string(), "-n", "4", "--size", "1GiB"});
  EXPECT_EQ(spec_many.code, 2);
  EXPECT_NE(spec_many.err.find("gpus_per_thread: 8 (--spec) is more than the run's 4 GPUs (-n)"), std::string::npos)
      << spec_many.err;
  EXPECT_EQ(run({"advise", "--spec", spec.string(), "-n", "8", "--size", "1GiB"}).code, 0);
  const auto critical = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"advise", "-n", "8", "--size", "1GiB", "--model", model, "--execution", "p2p_rounds",
                                  "--algorithms", "stragglar,nccl"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run(args);
    EXPECT_EQ(r.code, 0) << r.err;
    const std::size_t at = r.out.find("more than ");
    EXPECT_NE(at, std::string::npos) << r.out;
    return at == std::string::npos ? 0.0 : std::stod(r.out.substr(at + 10));
  };
  // StragglAR as p2p rounds pays a launch per round, nccl (fused) one: dearer launches, a later crossover.
  EXPECT_GT(critical({"--gpus-per-thread", "8"}), critical({}) + 0.1);
}

// The hierarchical algorithm takes its node size from the topology (simulate) or an option
// (verify, schedule); without one it is refused with the reason.
TEST(Cli, HierarchicalNeedsANodeSize) {
  const auto verified = run({"verify", "--algo", "hierarchical", "--n", "2..16", "--gpus-per-node", "4"});
  EXPECT_EQ(verified.code, 0) << verified.err;
  EXPECT_NE(verified.out.find("4 passed, 0 failed"), std::string::npos) << verified.out;  // n = 4, 8, 12, 16
  const auto listed = run({"schedule", "--algo", "hierarchical", "-n", "8", "--gpus-per-node", "4", "--format", "stats"});
  EXPECT_EQ(listed.code, 0) << listed.err;
  const auto bare = run({"schedule", "--algo", "hierarchical", "-n", "8"});
  EXPECT_EQ(bare.code, 2);
  EXPECT_NE(bare.err.find("GPUs per node"), std::string::npos) << bare.err;
  // 0 GPUs per node is named as given, not read as a missing option; a node size that does not
  // divide n says so when it leaves nothing to check.
  for (const char* command : {"schedule", "verify"}) {
    const auto zero = run({command, "--algo", "hierarchical", "-n", "8", "--gpus-per-node", "0"});
    EXPECT_EQ(zero.code, 2);
    EXPECT_NE(zero.err.find(std::string(command) + ": --gpus-per-node 0: a node has at least 1 GPU"), std::string::npos)
        << zero.err;
  }
  const auto nine = run({"verify", "--algo", "hierarchical", "-n", "8", "--gpus-per-node", "9"});
  EXPECT_EQ(nine.code, 2);
  EXPECT_NE(nine.err.find("(1 skipped; hierarchical at n = 8: n must be a multiple of the 9 GPUs per node)"),
            std::string::npos)
      << nine.err;
  const auto none = run({"verify", "--algo", "hierarchical", "-n", "8,16"});
  EXPECT_NE(none.err.find("(2 skipped; the first, hierarchical at n = 8: it needs the GPUs per node"),
            std::string::npos)
      << none.err;
  const auto cluster = run({"simulate", "--algo", "hierarchical", "-n", "64", "--topology", "cluster_h100_1024",
                            "--size", "1MiB", "--json"});
  EXPECT_EQ(cluster.code, 0) << cluster.err;
  const auto star = run({"simulate", "--algo", "hierarchical", "-n", "8", "--size", "1MiB"});
  EXPECT_EQ(star.code, 2);
  EXPECT_NE(star.err.find("hierarchical"), std::string::npos) << star.err;
}

// Studies and advise pass each topology's node size: hierarchical algorithms run on clusters and
// are refused, naming the topology, where there are no nodes.
TEST(Cli, StudiesRunHierarchicalAlgorithmsOnClusters) {
  test::TempDir dir;
  const std::string body = "algorithms: [hierarchical_rhd, hierarchical]\nn: 64\nsizes: [1MiB]\n";
  std::ofstream(dir.path() / "cluster.yaml") << "name: c\n" << body << "topology: cluster_h100_1024\n";
  std::ofstream(dir.path() / "star.yaml") << "name: s\n" << body << "topology: nvswitch\n";
  const auto out = (dir.path() / "out").string();
  const auto ok = run({"run", (dir.path() / "cluster.yaml").string(), "--out", out, "--quiet", "--no-plot"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  std::ifstream csv(dir.path() / "out" / "results.csv");
  const std::string text((std::istreambuf_iterator<char>(csv)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("hierarchical_rhd"), std::string::npos);
  const auto star = run({"run", (dir.path() / "star.yaml").string(), "--out", out + "2", "--quiet", "--no-plot"});
  EXPECT_EQ(star.code, 2);
  EXPECT_NE(star.err.find("topology 'nvswitch'"), std::string::npos) << star.err;
  const auto advised = run({"advise", "--topology", "cluster_h100_1024", "-n", "64", "--size", "1MiB"});
  EXPECT_EQ(advised.code, 0) << advised.err;
  EXPECT_NE(advised.out.find("hierarchical_rhd"), std::string::npos) << advised.out;
}

// stragglar_cluster runs from a spec's algorithm list on a cluster topology, and with one GPU
// late it finishes before the best hierarchical baseline (8 nodes, 1 GiB, 30 ms).
TEST(Cli, StragglarClusterRunsFromASpecAndHidesTheDelay) {
  test::TempDir dir;
  std::ofstream(dir.path() / "c.yaml") << "name: c\nalgorithms: [stragglar_cluster, hierarchical_rhd]\nn: 64\n"
                                       << "sizes: [1GiB]\ndelays: [30ms]\ntopology: cluster_h100_1024\n";
  const auto out = (dir.path() / "out").string();
  const auto ok = run({"run", (dir.path() / "c.yaml").string(), "--out", out, "--quiet", "--no-plot"});
  ASSERT_EQ(ok.code, 0) << ok.err;
  std::ifstream csv(dir.path() / "out" / "results.csv");
  const std::string text((std::istreambuf_iterator<char>(csv)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("stragglar_cluster"), std::string::npos) << text;
  double time_s[2] = {0, 0};
  const char* names[2] = {"stragglar_cluster", "hierarchical_rhd"};
  for (int i = 0; i < 2; ++i) {
    const auto r = run({"simulate", "--algo", names[i], "-n", "64", "--topology", "cluster_h100_1024", "--delay",
                        "30ms", "--json"});
    ASSERT_EQ(r.code, 0) << r.err;
    time_s[i] = YAML::Load(r.out)["time_s"].as<double>();
  }
  // After the arrival: about 4.5 ms against the 9.7 ms of the whole hierarchical AllReduce.
  EXPECT_LT(time_s[0] - 0.030, 0.6 * (time_s[1] - 0.030)) << time_s[0] << " vs " << time_s[1];
}

// NCCL's cluster algorithms (nvls_tree: the nodes' switches reduce in cluster_h100_1024) run
// from a spec on a cluster topology and spread the buffer over
// every NIC: on 8 nodes at 1 GiB each takes under a quarter of the flat ring (which leaves each
// node through one GPU's NIC) and of the flat double binary tree.
TEST(Cli, NcclClusterAlgorithmsRunFromASpecAndUseEveryNic) {
  test::TempDir dir;
  std::ofstream(dir.path() / "c.yaml") << "name: c\nalgorithms: [ring_multichannel, nccl_tree, nvls_tree]\nn: 64\n"
                                       << "sizes: [1GiB]\ndelays: [0, 30ms]\ntopology: cluster_h100_1024\n";
  const auto out = (dir.path() / "out").string();
  const auto ok = run({"run", (dir.path() / "c.yaml").string(), "--out", out, "--quiet", "--no-plot"});
  ASSERT_EQ(ok.code, 0) << ok.err;
  std::ifstream csv(dir.path() / "out" / "results.csv");
  const std::string text((std::istreambuf_iterator<char>(csv)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("ring_multichannel"), std::string::npos) << text;
  EXPECT_NE(text.find("nccl_tree"), std::string::npos) << text;
  EXPECT_NE(text.find("nvls_tree"), std::string::npos) << text;
  auto time_of = [](const char* algo) {
    const auto r = run({"simulate", "--algo", algo, "-n", "64", "--topology", "cluster_h100_1024", "--json"});
    EXPECT_EQ(r.code, 0) << r.err;
    return r.code == 0 ? YAML::Load(r.out)["time_s"].as<double>() : 0.0;
  };
  const double ring = time_of("ring"), tree = time_of("double_binary_tree");
  for (const char* algo : {"ring_multichannel", "nccl_tree", "nvls_tree"}) {
    const double t_s = time_of(algo);
    EXPECT_GT(t_s, 0.0) << algo;
    EXPECT_LT(t_s, 0.25 * ring) << algo;
    EXPECT_LT(t_s, 0.25 * tree) << algo;
  }
}

// Issue 10 §5.3: simulate refuses link flags a model file or a topology file would override.
TEST(Cli, SimulateOptionThatCannotApplyNamesBoth) {
  const std::string model = std::string(COLLSIM_SOURCE_DIR) + "/configs/models/h100_nvswitch.yaml";
  for (const std::string flag : {"--alpha", "--bandwidth"}) {
    const std::string value = flag == "--alpha" ? "1ms" : "100GBps";
    const auto with_model = run({"simulate", "--algo", "ring", "-n", "4", "--model", model, flag, value});
    EXPECT_EQ(with_model.code, 2);
    EXPECT_NE(with_model.err.find("--model or " + flag), std::string::npos) << with_model.err;
    const auto with_file = run({"simulate", "--algo", "ring", "-n", "8", "--topology", "dgx1", flag, value});
    EXPECT_EQ(with_file.code, 2);
    EXPECT_NE(with_file.err.find(flag + " applies only to --topology nvswitch or full_mesh"), std::string::npos)
        << with_file.err;
    EXPECT_NE(with_file.err.find("dgx1"), std::string::npos) << with_file.err;
  }
  EXPECT_EQ(run({"simulate", "--algo", "ring", "-n", "8", "--topology", "dgx1", "--gamma", "0"}).code, 0);
}

// Issue 10 §5.7: a hanging plot script is stopped after --plot-timeout and reported (the results
// stay), and --no-plot does not even look for the script.
TEST(Cli, RunStopsAHangingPlotScriptAndNoPlotSkipsIt) {
  test::TempDir dir;
  std::ofstream(dir.path() / "hang.py") << "import time\ntime.sleep(120)\n";
  const std::string body = "algorithms: [ring]\nn: 4\nsizes: [1MiB]\n";
  std::ofstream(dir.path() / "hang.yaml") << "name: hang\n" << body << "plot: hang.py\n";
  std::ofstream(dir.path() / "gone.yaml") << "name: gone\n" << body << "plot: no_such_script.py\n";
  const auto out = (dir.path() / "out").string();
  // `run` reports plot failures on std::cerr and exits 3 (the results are complete): capture it.
  std::ostringstream plot_err;
  std::streambuf* const saved = std::cerr.rdbuf(plot_err.rdbuf());
  const auto hung = run({"run", (dir.path() / "hang.yaml").string(), "--out", out, "--quiet", "--plot-timeout", "1s"});
  std::cerr.rdbuf(saved);
  EXPECT_EQ(hung.code, 3) << hung.err;
  EXPECT_NE(plot_err.str().find("timed out after 1 s"), std::string::npos) << plot_err.str();
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "out" / "results.csv"));

  const auto missing = run({"run", (dir.path() / "gone.yaml").string(), "--out", out + "2", "--quiet"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("no_such_script.py"), std::string::npos) << missing.err;
  const auto skipped = run({"run", (dir.path() / "gone.yaml").string(), "--out", out + "2", "--quiet", "--no-plot"});
  EXPECT_EQ(skipped.code, 0) << skipped.err;
}

// Issue 10 §5.4: output paths. A missing parent directory is an error (nothing is created), an
// empty path is an error naming the option; only `run --out` creates its directory.
TEST(Cli, OutputPathsAreCheckedNotCreated) {
  test::TempDir dir;
  const std::string missing = (dir.path() / "no" / "such").string();
  const auto trace = run({"simulate", "--algo", "ring", "-n", "4", "--trace", missing + "/t.json"});
  EXPECT_EQ(trace.code, 2);
  EXPECT_NE(trace.err.find("--trace"), std::string::npos) << trace.err;
  EXPECT_NE(trace.err.find("does not exist"), std::string::npos) << trace.err;
  const auto empty_trace = run({"simulate", "--algo", "ring", "-n", "4", "--trace", ""});
  EXPECT_EQ(empty_trace.code, 2);
  EXPECT_NE(empty_trace.err.find("option --trace is empty (it needs FILE)"), std::string::npos) << empty_trace.err;
  const std::string log = std::string(COLLSIM_TEST_DATA_DIR) + "/nccl-tests/h100-8gpu-allreduce-nvidia-exemplar.txt";
  const auto calibrate = run({"calibrate", log, "--out", missing + "/x.yaml", "--no-plot"});
  EXPECT_EQ(calibrate.code, 2);
  EXPECT_NE(calibrate.err.find("--out"), std::string::npos) << calibrate.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "no"));

  const std::string spec = std::string(COLLSIM_TEST_DATA_DIR) + "/experiments/mpi_small.yaml";
  // No option takes an empty value (--topology '' ran nvswitch, --model '' said "cannot read ''").
  for (const char* option : {"--topology", "--model", "--engine", "--seed"}) {
    const auto empty = run({"simulate", "--algo", "ring", "-n", "4", option, ""});
    EXPECT_EQ(empty.code, 2) << option;
    EXPECT_NE(empty.err.find(std::string("option ") + option + " is empty"), std::string::npos) << empty.err;
  }
  const auto empty_out = run({"run", spec, "--out", "", "--quiet"});
  EXPECT_EQ(empty_out.code, 2);
  EXPECT_NE(empty_out.err.find("option --out is empty (it needs DIR)"), std::string::npos) << empty_out.err;
  const auto created = run({"run", spec, "--out", missing, "--quiet", "--no-plot"});
  EXPECT_EQ(created.code, 0) << created.err;
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(missing) / "results.csv"));
}

// Issue 10 §5.6: the schedule's memory is estimated before generating it; too much is an error
// naming -n, the estimate and the override.
TEST(Cli, SimulateRefusesAScheduleTooLargeBeforeGeneratingIt) {
  const auto r = run({"simulate", "--algo", "stragglar", "-n", "2000", "--max-schedule-memory", "1MiB"});
  EXPECT_EQ(r.code, 2);
  for (const char* part : {"-n 2000", "stragglar", "MiB (estimated)", "--max-schedule-memory 1MiB"}) {
    EXPECT_NE(r.err.find(part), std::string::npos) << part << " in " << r.err;
  }
  EXPECT_EQ(run({"simulate", "--algo", "ring", "-n", "600", "--max-schedule-memory", "64MiB"}).code, 0);
  // On a contended fabric the event-driven engine's index of the schedule counts too (as large
  // as the schedule on a ring: 11 MiB each at n = 600).
  EXPECT_EQ(run({"simulate", "--algo", "ring", "-n", "600", "--max-schedule-memory", "16MiB"}).code, 0);
  const auto contended = run({"simulate", "--algo", "ring", "-n", "600", "--topology", "cluster_h100_1024_2to1",
                              "--max-schedule-memory", "16MiB"});
  EXPECT_EQ(contended.code, 2);
  for (const char* part : {"-n 600", "replay engine's index", "cluster_h100_1024_2to1", "21.9 MiB in all (estimated)"}) {
    EXPECT_NE(contended.err.find(part), std::string::npos) << part << " in " << contended.err;
  }
}

// A limit of 0 is a bad value, named as such (as run's --max-run-memory does), not a schedule
// "above --max-schedule-memory 0" that no -n could fit.
TEST(Cli, SimulateRejectsAZeroScheduleMemoryLimit) {
  for (const char* zero : {"0", "0GiB", "-0"}) {
    const auto r = run({"simulate", "--algo", "ring", "-n", "8", "--max-schedule-memory", zero});
    EXPECT_EQ(r.code, 2) << zero;
    EXPECT_NE(r.err.find(std::string("--max-schedule-memory: ") + zero + " must be positive"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("above"), std::string::npos) << r.err;
  }
}

// Issue 10 §5.6: --dry-run prints the runs, CPU time and journal size a study would take.
TEST(Cli, DryRunEstimatesRunsCpuTimeAndJournal) {
  test::TempDir dir;
  const auto spec = dir.path() / "big.yaml";
  std::ofstream(spec) << "name: big\nalgorithms: [stragglar]\nn: 64\ntrials: 100000000\n";
  const auto r = run({"run", spec.string(), "--dry-run"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("estimated: 200000000 runs, CPU time "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" h (rough"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GiB, largest schedule"), std::string::npos) << r.out;
}

// Issue 10 §5.5: the reported inputs are refused with a message naming the option and value.
TEST(Cli, UnitsRequiredIntegerBytesAndSaneRange) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bandwidth", "450"}, "--bandwidth: '450' needs a unit"},
      {{"--size", "1.5B"}, "--size: size '1.5B' is 1.5 bytes, not a whole number of bytes"},
      {{"--delay", "1e300s"}, "--delay: duration '1e300s' is longer than 3600 s"},
      {{"--delay", "1e10s"}, "--delay: duration '1e10s' is longer than 3600 s"},
  };
  for (const auto& [flags, expected] : cases) {
    std::vector<std::string> args{"simulate", "--algo", "ring", "-n", "4"};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << flags[0];
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
  }
  // A config.resolved.yaml is written with units, so `collsim run` on it still works.
  test::TempDir dir;
  const std::string spec = std::string(COLLSIM_TEST_DATA_DIR) + "/experiments/good.yaml";
  ASSERT_EQ(run({"run", spec, "--out", dir.path().string(), "--quiet", "--no-plot"}).code, 0);
  const auto again = run({"run", (dir.path() / "config.resolved.yaml").string(), "--dry-run"});
  EXPECT_EQ(again.code, 0) << again.err;
}

}  // namespace
}  // namespace collsim
