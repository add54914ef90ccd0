#include "collsim/experiments/runner.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "collsim/algorithms/registry.hpp"
#include "collsim/experiments/checkpoint.hpp"
#include "collsim/experiments/cli.hpp"
#include "collsim/experiments/output.hpp"
#include "collsim/models/topology.hpp"

namespace collsim {
namespace {

namespace fs = std::filesystem;

// Random arrivals (lognormal straggler that moves, uniform jitter) so that seeds matter.
const std::string kStudy =
    "name: resume_study\n"
    "algorithms: [recursive_halving_doubling, binomial_tree]\n"
    "n: [4, 8]\n"
    "sizes: [64KiB, 4MiB]\n"
    "arrival:\n"
    "  - {label: ln, model: stragglers, rank: 3, delay: {distribution: lognormal, median: 1ms, mean: 2ms}, persistence: 0.7}\n"
    "  - {label: jit, model: none, jitter: {distribution: uniform, min: 0, max: 50us}}\n"
    "start: [barrier, eager]\n"
    "trials: 6\n"
    "seed: 7\n";

ExperimentSpec make_spec(const std::string& text) {
  ExperimentSpec spec = parse_spec(text, "test.yaml", {});
  validate(spec);
  return spec;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("collsim_test_{}_{}", name, ::getpid());
  fs::remove_all(dir);
  return dir;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) out.push_back(field);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

TEST(Runner, SameSeedGivesTheSameBytes) {
  const ExperimentSpec spec = make_spec(kStudy);
  const SweepGrid grid(spec);
  const StudyResult a = run_study(grid, {});
  const StudyResult b = run_study(grid, {});
  ASSERT_TRUE(a.complete);
  EXPECT_EQ(results_csv(grid, a), results_csv(grid, b));
  EXPECT_EQ(summary_csv(grid, a), summary_csv(grid, b));
  std::string text = kStudy;
  text.replace(text.find("seed: 7"), 7, "seed: 8");
  const ExperimentSpec other = make_spec(text);
  const SweepGrid other_grid(other);
  EXPECT_NE(results_csv(other_grid, run_study(other_grid, {})), results_csv(grid, a));
}

// `nccl` in a study runs NCCL's choice at each point and results.csv names it; its time is the
// chosen row's, and the other rows leave the columns empty.
TEST(Runner, NcclRowsSayWhatTheyRan) {
  const ExperimentSpec spec = make_spec("name: t\nalgorithms: [nccl, double_binary_tree]\nn: 8\nsizes: [64B, 1GiB]\n");
  const SweepGrid grid(spec);
  const StudyResult result = run_study(grid, {});
  const auto rows = lines_of(results_csv(grid, result));
  int nccl_rows = 0;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const auto f = fields(rows[r]);
    const std::string& protocol = f.back();
    const std::string& chosen = f[f.size() - 2];
    if (f[0] == "nccl") {
      ++nccl_rows;
      EXPECT_TRUE(find_algorithm(chosen).nccl_candidate) << rows[r];
      EXPECT_EQ(protocol, "model");
    } else {
      EXPECT_TRUE(chosen.empty() && protocol.empty()) << rows[r];
    }
  }
  EXPECT_EQ(nccl_rows, 2);
  // At every point nccl is no slower than the candidates the spec also ran.
  for (std::size_t i = 0; i < grid.num_points(); ++i) {
    const Point p = grid.point(i);
    if (spec.algorithms[p.algorithm] != "nccl" || !result.points[i].active) continue;
    for (std::size_t j = 0; j < grid.num_points(); ++j) {
      const Point q = grid.point(j);
      if (q.size != p.size || spec.algorithms[q.algorithm] == "nccl" || !result.points[j].active) continue;
      if (!find_algorithm(spec.algorithms[q.algorithm]).nccl_candidate) continue;
      EXPECT_LE(result.points[i].trials[0].time_s, result.points[j].trials[0].time_s * (1 + 1e-12));
    }
  }
}

// A study sizes a pipeline as `simulate` does (set_sizing): on the NIC share of GPUs that share
// a NIC, on NVLink where it binds, at the switch's efficiency. The study's schedule cache once
// kept only the size, latency and NIC bandwidth: stragglar_cluster on 4 NICs per 8-GPU node ran
// at 36.886 instead of 36.778 ms, and two topologies with the same NIC shared one schedule.
TEST(Runner, SizesPipelinesAsSimulateDoes) {
  const fs::path dir = fresh_dir("sizing");
  fs::create_directories(dir);
  const std::string fast = (dir / "fast_nics.yaml").string();
  std::ofstream(fast) << "kind: cluster\nn: 64\nswitch_reduction: true\nswitch_reduction_efficiency: 0.796875\n"
                         "cluster: {gpus_per_node: 8, nvlink_bandwidth: 450GBps, nvlink_latency: 3us, "
                         "nic_bandwidth: 1600Gbps, network_latency: 10us, nodes_per_leaf: 16}\n";
  struct Case {
    std::string algorithm, topology;
    int n;
  };
  const std::vector<Case> cases{{"stragglar_cluster", "cluster_h100_1024", 32},
                                {"stragglar_cluster", "cluster_h100_1024_4nic", 32},
                                {"stragglar_cluster", fast, 32},
                                {"nvls_tree", fast, 32},
                                {"nvls", "dgx_h100", 8}};
  for (const Case& c : cases) {
    // One spec per case, and both 400 Gb/s clusters in one study, so the cache sees them in turn.
    const std::string topologies = c.topology == "cluster_h100_1024_4nic" ? "[cluster_h100_1024, cluster_h100_1024_4nic]"
                                                                          : "[" + c.topology + "]";
    const ExperimentSpec spec = make_spec(fmt::format(
        "name: t\nalgorithms: [{}]\nn: {}\nsizes: [1GiB]\ntopology: {}\ndelays: [30ms]\nengine: replay\nbaseline: {}\n",
        c.algorithm, c.n, topologies, c.algorithm));
    const SweepGrid grid(spec);
    const StudyResult result = run_study(grid, {});
    std::ostringstream out, err;
    ASSERT_EQ(run_cli({"simulate", "-a", c.algorithm, "--topology", c.topology, "-n", std::to_string(c.n), "--delay",
                       "30ms", "--json"},
                      out, err),
              0)
        << err.str();
    const std::string json = out.str();
    const auto at = json.find("\"time_s\":");
    ASSERT_NE(at, std::string::npos) << json;
    const double simulated_s = std::stod(json.substr(at + 9));
    int compared = 0;
    for (std::size_t i = 0; i < grid.num_points(); ++i) {
      const Point p = grid.point(i);
      if (p.topology + 1 != spec.topologies.size() || spec.algorithms[p.algorithm] != c.algorithm) continue;
      ASSERT_TRUE(result.points[i].active);
      EXPECT_NEAR(result.points[i].trials[0].time_s, simulated_s, 1e-12 * simulated_s)
          << c.algorithm << " on " << c.topology;
      ++compared;
    }
    EXPECT_EQ(compared, 1) << c.algorithm << " on " << c.topology;
  }
  // What set_sizing() reads from a cluster (both runs above go through it).
  AlgorithmOptions sizing;
  set_sizing(sizing, resolve_topology("cluster_h100_1024_4nic", 32, LinkModel{}), 1 << 30);
  EXPECT_EQ(sizing.gpus_per_nic, 2u);
  EXPECT_EQ(sizing.nvlink_bandwidth_Bps, 450e9);
  EXPECT_EQ(sizing.switch_efficiency, 0.796875);
  fs::remove_all(dir);
}

// `reshare_interval` reaches the engine: the study's time is simulate's with --reshare-interval,
// and not the exact one (at n = 512 on 2:1 a 20 us interval moves StragglAR by 0.3 %).
TEST(Runner, RunsTheApproximateModeAsSimulateDoes) {
  const ExperimentSpec spec = make_spec(
      "name: t\nalgorithms: [stragglar]\nn: 512\nsizes: [1GiB]\ntopology: [cluster_h100_1024_2to1]\n"
      "delays: [1ms]\nengine: replay\nreshare_interval: 20us\n");
  const SweepGrid grid(spec);
  const StudyResult result = run_study(grid, {});
  // The latest point is the 1 ms one (the grid also holds the no-delay reference).
  double study_s = 0;
  for (std::size_t i = 0; i < grid.num_points(); ++i) study_s = std::max(study_s, result.points[i].trials[0].time_s);
  const auto simulate_s = [](const std::string& interval) {
    std::ostringstream out, err;
    EXPECT_EQ(run_cli({"simulate", "-a", "stragglar", "--topology", "cluster_h100_1024_2to1", "-n", "512", "--delay", "1ms",
                       "--reshare-interval", interval, "--json"},
                      out, err),
              0)
        << err.str();
    const std::string json = out.str();
    return std::stod(json.substr(json.find("\"time_s\":") + 9));
  };
  EXPECT_EQ(study_s, simulate_s("20us"));
  EXPECT_GT(std::abs(study_s / simulate_s("0") - 1), 1e-4);
}

// Straggler-aware schedules are built for the straggler with the largest median delay, in a
// study as in simulate, whatever order the stragglers are listed in.
TEST(Runner, SchedulesFollowTheStragglerWithTheLargestMedianDelay) {
  const auto study_s = [](const std::string& stragglers) {
    const ExperimentSpec spec = make_spec("name: t\nalgorithms: [stragglar]\nn: 8\nsizes: [1GiB]\ntopology: nvswitch\n"
                                          "arrival: {model: stragglers, stragglers: " + stragglers + "}\nengine: replay\n");
    const SweepGrid grid(spec);
    const StudyResult result = run_study(grid, {});
    return result.points[0].trials[0].time_s;
  };
  const auto simulate_s = [](const std::string& stragglers) {
    std::ostringstream out, err;
    EXPECT_EQ(run_cli({"simulate", "-a", "stragglar", "-n", "8", "--stragglers", stragglers, "--json"}, out, err), 0) << err.str();
    const std::string json = out.str();
    EXPECT_NE(json.find("\"expected_straggler\":5"), std::string::npos) << json;
    return std::stod(json.substr(json.find("\"time_s\":") + 9));
  };
  const double late_first = study_s("[{rank: 5, delay: 3ms}, {rank: 1, delay: 1ms}]");
  EXPECT_EQ(study_s("[{rank: 1, delay: 1ms}, {rank: 5, delay: 3ms}]"), late_first);
  EXPECT_EQ(simulate_s("1:1ms,5:3ms"), late_first);
  EXPECT_EQ(simulate_s("5:3ms,1:1ms"), late_first);
}

// --schedule-for builds the schedule for a rank other than the late one: a wrong guess costs
// time, the right one equals the default, and ranks out of range or algorithms whose schedule
// does not depend on the late rank are refused by name.
TEST(Runner, ScheduleForBuildsForTheGivenRankWhoeverIsLate) {
  const auto simulate = [](std::vector<std::string> extra, int expect_rc = 0) {
    std::vector<std::string> args{"simulate", "-a", "stragglar", "-n", "8", "--stragglers", "1:1ms,5:3ms", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::ostringstream out, err;
    EXPECT_EQ(run_cli(args, out, err), expect_rc) << err.str();
    return std::make_pair(out.str(), err.str());
  };
  const auto time_s = [](const std::string& json) { return std::stod(json.substr(json.find("\"time_s\":") + 9)); };
  const auto [chosen, e1] = simulate({});
  const auto [same, e2] = simulate({"--schedule-for", "5"});
  const auto [wrong, e3] = simulate({"--schedule-for", "1"});
  EXPECT_EQ(time_s(same), time_s(chosen));
  EXPECT_NE(wrong.find("\"expected_straggler\":1"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("\"straggler\":5"), std::string::npos) << wrong;
  EXPECT_GT(time_s(wrong), time_s(chosen) * 1.001);
  // With --straggler and --delay, the late rank and the schedule's rank part.
  std::ostringstream out, err;
  EXPECT_EQ(run_cli({"simulate", "-a", "stragglar", "-n", "8", "--straggler", "2", "--delay", "3ms", "--schedule-for", "6", "--json"}, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("\"expected_straggler\":6"), std::string::npos) << out.str();
  EXPECT_NE(simulate({"--schedule-for", "8"}, 2).second.find("--schedule-for 8 is not a rank of n = 8"), std::string::npos);
  std::ostringstream out2, err2;
  EXPECT_EQ(run_cli({"simulate", "-a", "ring", "-n", "8", "--delay", "3ms", "--schedule-for", "2"}, out2, err2), 2);
  EXPECT_NE(err2.str().find("--schedule-for 2 applies only to algorithms whose schedule depends on the late rank, not 'ring'"), std::string::npos)
      << err2.str();
}

TEST(Runner, ResultsHaveTheDocumentedColumnsAndCommonRandomNumbers) {
  const ExperimentSpec spec = make_spec(kStudy);
  const SweepGrid grid(spec);
  const StudyResult result = run_study(grid, {});
  const auto rows = lines_of(results_csv(grid, result));
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0],
            "algorithm,n,size_bytes,topology,engine,start,delay_s,trial,seed,time_s,time_after_last_arrival_s,"
            "speedup_vs_ring,arrival,straggler,straggler_moved,algbw_GBps,busbw_GBps,hidden_delay_fraction,transfers,"
            "nccl_algorithm,nccl_protocol");
  EXPECT_EQ(rows.size(), 1 + grid.num_points() * spec.trials);
  const auto header = fields(rows[0]);
  for (std::size_t r = 1; r < rows.size(); ++r) EXPECT_EQ(fields(rows[r]).size(), header.size()) << rows[r];
  // Every algorithm of a scenario sees the same arrivals in each trial; ring's speedup is 1.
  bool moved = false;
  for (std::size_t i = 0; i < grid.num_points(); ++i) {
    const PointResult& p = result.points[i];
    const PointResult& ring = result.points[grid.baseline(i)];
    ASSERT_EQ(p.trials.size(), spec.trials);
    for (std::size_t t = 0; t < p.trials.size(); ++t) {
      EXPECT_EQ(p.trials[t].delay_s, ring.trials[t].delay_s);
      EXPECT_EQ(p.trials[t].straggler, ring.trials[t].straggler);
      moved = moved || p.trials[t].straggler_moved;
    }
  }
  EXPECT_TRUE(moved) << "persistence 0.7 over 6 trials should move the straggler at least once";
  const auto speedups = speedups_vs_baseline(grid, result);
  for (std::size_t i = 0; i < grid.num_points(); ++i) {
    for (std::size_t t = 0; t < spec.trials; ++t) {
      const double expected = result.points[grid.baseline(i)].trials[t].time_s / result.points[i].trials[t].time_s;
      EXPECT_DOUBLE_EQ(speedups[i][t], expected);
      if (grid.baseline(i) == i) {
        EXPECT_EQ(speedups[i][t], 1.0);
      }
    }
  }
}

TEST(Runner, ANamedBaselineIsTheReferenceOfEverySpeedup) {
  const ExperimentSpec spec =
      make_spec("name: t\nalgorithms: [stragglar, ring]\nn: 8\ndelays: [0, 1ms]\nbaseline: recursive_halving_doubling\n");
  const SweepGrid grid(spec);
  const StudyResult result = run_study(grid, {});
  const auto rows = lines_of(results_csv(grid, result));
  ASSERT_FALSE(rows.empty());
  EXPECT_NE(rows[0].find(",speedup_vs_baseline,"), std::string::npos) << rows[0];
  EXPECT_EQ(rows[0].find("speedup_vs_ring"), std::string::npos) << rows[0];
  EXPECT_NE(lines_of(summary_csv(grid, result))[0].find("mean_speedup_vs_baseline,speedup_of_mean_vs_baseline"),
            std::string::npos);
  const auto speedups = speedups_vs_baseline(grid, result);
  for (std::size_t i = 0; i < grid.num_points(); ++i) {
    EXPECT_EQ(spec.algorithms[grid.point(grid.baseline(i)).algorithm], "recursive_halving_doubling");
    const double expected = result.points[grid.baseline(i)].trials[0].time_s / result.points[i].trials[0].time_s;
    EXPECT_DOUBLE_EQ(speedups[i][0], expected);
  }
}

TEST(Runner, HiddenDelayFractionOfABarrierBaselineIsZero) {
  const ExperimentSpec spec = make_spec("name: t\nalgorithms: [ring]\nn: 8\ndelays: 1ms\nstart: barrier\n");
  const SweepGrid grid(spec);
  const auto rows = lines_of(results_csv(grid, run_study(grid, {})));
  ASSERT_EQ(rows.size(), 2u);
  const auto f = fields(rows[1]);
  EXPECT_NEAR(std::stod(f[17]), 0.0, 1e-9) << rows[1];  // barrier ring pays d + T
  EXPECT_EQ(f[6], "0.001");
  EXPECT_EQ(f[13], "7");
}

struct Interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Stops a run as a crash would, after `units` units were finished (and checkpointed) here.
class InterruptAfter final : public ProgressSink {
 public:
  explicit InterruptAfter(std::size_t units) : left_(units) {}
  void start(double, double, std::size_t, std::size_t) override {}
  void advance(double, std::size_t) override {
    if (--left_ == 0) throw Interrupted("interrupted by the test");
  }
  void finish() override {}

 private:
  std::size_t left_;
};

// Mirrors run_command: run, write the files, drop the checkpoint. stop_after > 0 interrupts
// the run after that many units.
StudyResult run_into(const ExperimentSpec& spec, const fs::path& dir, std::size_t stop_after = 0) {
  const SweepGrid grid(spec);
  RunnerOptions options;
  options.checkpoint_dir = dir;
  InterruptAfter interrupt(stop_after);
  if (stop_after > 0) options.progress = &interrupt;
  StudyResult result = run_study(grid, options);
  write_study_outputs(dir, grid, result);
  fs::remove(checkpoint_path(dir));
  return result;
}

TEST(Runner, InterruptedRunResumesAndMatchesAnUninterruptedOne) {
  const ExperimentSpec spec = make_spec(kStudy);
  const fs::path whole = fresh_dir("whole");
  const fs::path resumed = fresh_dir("resumed");
  run_into(spec, whole);

  EXPECT_THROW(run_into(spec, resumed, 5), Interrupted);
  EXPECT_TRUE(fs::exists(checkpoint_path(resumed)));
  EXPECT_FALSE(fs::exists(resumed / "results.csv"));
  // A second interruption after more work, then completion.
  EXPECT_THROW(run_into(spec, resumed, 3), Interrupted);
  const StudyResult result = run_into(spec, resumed);
  EXPECT_EQ(result.units_resumed, 8u);
  EXPECT_EQ(result.units_total, SweepGrid(spec).num_points());
  for (const char* file : {"results.csv", "summary.csv"}) {
    EXPECT_EQ(read(whole / file), read(resumed / file)) << file;
  }
  EXPECT_FALSE(fs::exists(checkpoint_path(resumed)));
  const auto timing = lines_of(read(resumed / "timing.csv"));
  std::size_t resumed_rows = 0;
  for (std::size_t r = 1; r < timing.size(); ++r) resumed_rows += fields(timing[r]).back() == "1" ? 1 : 0;
  EXPECT_EQ(resumed_rows, 8u);
  fs::remove_all(whole);
  fs::remove_all(resumed);
}

TEST(Runner, CheckpointOfAnotherStudyIsIgnored) {
  const fs::path dir = fresh_dir("other");
  const ExperimentSpec spec = make_spec(kStudy);
  EXPECT_THROW(run_into(spec, dir, 4), Interrupted);
  std::string text = kStudy;
  text.replace(text.find("trials: 6"), 9, "trials: 5");
  const StudyResult result = run_into(make_spec(text), dir);
  EXPECT_EQ(result.units_resumed, 0u);
  fs::remove_all(dir);
}

// A trace's arrivals are no key of the resolved spec, only its file name: after the trace file
// was edited, the interrupted run's units (of the old arrivals) were resumed into the results.
TEST(Runner, CheckpointOfAnEditedTraceIsIgnored) {
  const fs::path dir = fresh_dir("edited_trace");
  fs::create_directories(dir);
  const fs::path trace = dir / "arrivals.csv";
  const auto write_trace = [&](const char* late) {
    std::ofstream out(trace);
    out << "iteration,rank,arrival_s\n";
    for (int it = 0; it < 6; ++it) out << fmt::format("{0},0,0\n{0},1,0\n{0},2,0\n{0},3,{1}\n", it, late);
  };
  const std::string text =
      "name: edited_trace\nalgorithms: [ring, stragglar]\nn: [4]\nsizes: [64KiB, 1MiB, 4MiB]\n"
      "arrival: {label: t, model: trace, file: arrivals.csv}\n";
  const auto spec_now = [&] {
    ExperimentSpec spec = parse_spec(text, "test.yaml", dir);
    validate(spec);
    return spec;
  };
  write_trace("0.005");
  EXPECT_THROW(run_into(spec_now(), dir / "out", 2), Interrupted);
  write_trace("0");
  const ExperimentSpec edited = spec_now();
  const StudyResult result = run_into(edited, dir / "out");
  EXPECT_EQ(result.units_resumed, 0u);
  const fs::path fresh = dir / "fresh";
  run_into(edited, fresh);
  EXPECT_EQ(read(dir / "out" / "results.csv"), read(fresh / "results.csv"));
  fs::remove_all(dir);
}

TEST(Checkpoint, RoundTripIsExactAndTornLinesAreIgnored) {
  UnitResult u;
  u.unit = 3;
  u.point = 7;
  u.trial_begin = 10;
  u.trial_end = 12;
  u.time_no_delay_s = std::nan("");
  u.wall_s = 0.125;
  u.trials = {{1.0 / 3, 2.0 / 7, 1e-300, 5, true, 123456789012ULL}, {0, 0.1 + 0.2, 3.14159, 0, false, 0}};
  const UnitResult back = decode_unit(encode_unit(u));
  EXPECT_EQ(back.unit, 3u);
  EXPECT_EQ(back.point, 7u);
  EXPECT_TRUE(std::isnan(back.time_no_delay_s));
  ASSERT_EQ(back.trials.size(), 2u);
  EXPECT_EQ(back.trials[0].delay_s, 1.0 / 3);
  EXPECT_EQ(back.trials[0].time_s, 2.0 / 7);
  EXPECT_EQ(back.trials[0].time_after_last_arrival_s, 1e-300);
  EXPECT_TRUE(back.trials[0].straggler_moved);
  EXPECT_EQ(back.trials[0].transfers, 123456789012ULL);
  EXPECT_EQ(back.trials[1].time_s, 0.1 + 0.2);
  EXPECT_THROW(decode_unit("U 1 2"), Error);
  EXPECT_THROW(decode_unit(encode_unit(u) + " 9"), Error);

  const fs::path dir = fresh_dir("journal");
  {
    Checkpoint cp(checkpoint_path(dir), "abc");
    EXPECT_TRUE(cp.load().empty());
    cp.append(u);
    u.unit = 4;
    cp.append(u);
  }
  {
    std::ofstream torn(checkpoint_path(dir), std::ios::app);
    torn << encode_unit(u).substr(0, 20);  // a crash in the middle of a line
  }
  Checkpoint again(checkpoint_path(dir), "abc");
  EXPECT_EQ(again.load().size(), 2u);
  u.unit = 5;
  again.append(u);  // appending after a torn line starts a new line
  Checkpoint third(checkpoint_path(dir), "abc");
  EXPECT_EQ(third.load().size(), 3u);
  EXPECT_FALSE(third.discarded());
  Checkpoint other(checkpoint_path(dir), "xyz");
  EXPECT_TRUE(other.load().empty());
  EXPECT_TRUE(other.discarded());
  fs::remove_all(dir);
}

// Code changes alter results without touching the spec (the version never moved): a journal of
// another build resumed its units into this build's results, and a summary named the wrong
// winner. The build is part of the fingerprint, and `run` says when it started over.
TEST(Checkpoint, AnotherBuildHasAnotherFingerprint) {
  const ExperimentSpec spec = make_spec(kStudy);
  EXPECT_EQ(study_fingerprint(spec), study_fingerprint(spec, collsim_build_id()));
  EXPECT_NE(study_fingerprint(spec, "0123abcd"), study_fingerprint(spec, "0123abce"));
  EXPECT_FALSE(collsim_build_id().empty());

  const fs::path dir = fresh_dir("other_build");
  {
    Checkpoint old_build(checkpoint_path(dir), study_fingerprint(spec, "an older build"));
    UnitResult u;
    u.trials = {{0.5, 1.0, 0.5, 3, false, 8}};
    old_build.append(u);
  }
  const StudyResult result = run_into(spec, dir);
  EXPECT_EQ(result.units_resumed, 0u);
  EXPECT_TRUE(result.checkpoint_discarded);
  fs::remove_all(dir);
}

UnitResult unit_3_of_one_trial() {
  UnitResult u;
  u.unit = 3;
  u.trial_end = 1;
  u.trials = {{0.5, 1.0, 0.5, 3, false, 8}};
  return u;
}

// Every journal line carries a checksum of its body: a line whose body changed after it was
// written (a bit flip, a hand edit) still decodes, and would resume a unit with results nobody
// computed. Such a line is dropped and the unit runs again.
TEST(Checkpoint, ALineWhoseChecksumNoLongerMatchesIsIgnored) {
  const UnitResult u = unit_3_of_one_trial();
  const fs::path dir = fresh_dir("checksum");
  Checkpoint(checkpoint_path(dir), "abc").append(u);
  ASSERT_EQ(Checkpoint(checkpoint_path(dir), "abc").load().size(), 1u);  // the record as written resumes
  std::string journal = read(checkpoint_path(dir));
  const auto body = journal.find("U 3 ");
  ASSERT_NE(body, std::string::npos) << journal;
  journal[body + 2] = '4';  // still a valid record, of another unit
  std::ofstream(checkpoint_path(dir), std::ios::trunc) << journal;
  Checkpoint edited(checkpoint_path(dir), "abc");
  EXPECT_TRUE(edited.load().empty());
  EXPECT_FALSE(edited.discarded());  // the header still matches: only the line is dropped
  fs::remove_all(dir);
}

// A line whose checksum matches but whose record no run writes (an edited journal) is dropped
// too: a trial range of 4e9 was allocated before anything checked it (the kernel killed the
// run), and negative or infinite times were resumed into the results.
TEST(Checkpoint, ARecordNoRunWritesIsIgnored) {
  const UnitResult u = unit_3_of_one_trial();
  const fs::path dir = fresh_dir("implausible");
  Checkpoint(checkpoint_path(dir), "abc").append(u);
  const auto signed_line = [](const std::string& body) { return fmt::format("{} #{:016x}\n", body, fnv1a64(body)); };
  {
    std::ofstream journal(checkpoint_path(dir), std::ios::app);
    journal << signed_line("U 4 0 0 4000000000 nan 0.1 0 0 0.5 1 0.5 3 0 8");
    for (const char* bad : {"-0.001", "nan", "inf"})
      journal << signed_line(fmt::format("U 5 0 0 1 nan 0.1 0 0 0.5 {} 0.5 3 0 8", bad));
    journal << signed_line("U 6 0 0 1 nan -1 0 0 0.5 1 0.5 3 0 8");
  }
  const std::vector<UnitResult> loaded = Checkpoint(checkpoint_path(dir), "abc").load();
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].unit, 3u);
  EXPECT_THROW(decode_unit("U 4 0 0 4000000000 nan 0.1 0 0 0.5 1 0.5 3 0 8"), Error);
  fs::remove_all(dir);
}

TEST(Output, AtomicWritesLeaveNoPartialFile) {
  const ExperimentSpec spec = make_spec("name: t\nalgorithms: [ring]\nn: 4\n");
  const SweepGrid grid(spec);
  const StudyResult result = run_study(grid, {});
  const fs::path dir = fresh_dir("atomic");
  // results.csv is a directory: its rename fails after the temporary file was written.
  fs::create_directories(dir / "results.csv" / "blocker");
  EXPECT_THROW(write_study_outputs(dir, grid, result), ConfigError);
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
  EXPECT_FALSE(fs::exists(dir / "summary.csv"));
  // An error while building the contents writes nothing at all.
  const fs::path empty_dir = fresh_dir("atomic_empty");
  StudyResult incomplete;
  EXPECT_THROW(write_study_outputs(empty_dir, grid, incomplete), InternalError);
  EXPECT_FALSE(fs::exists(empty_dir));
  // Stale temporaries of a killed writer are removed.
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "results.csv.tmp.12345") << "half";
  std::ofstream(dir / "notes.txt.tmp.1") << "not ours";
  remove_stale_temporaries(dir);
  EXPECT_FALSE(fs::exists(dir / "results.csv.tmp.12345"));
  EXPECT_TRUE(fs::exists(dir / "notes.txt.tmp.1"));
  fs::remove_all(dir);
}

TEST(Output, SummaryStatistics) {
  std::vector<double> hundred;
  for (int i = 1; i <= 100; ++i) hundred.push_back(101 - i);  // unsorted on purpose
  const SampleStats s = summarize(hundred);
  EXPECT_EQ(s.count, 100u);
  EXPECT_EQ(s.p50, 50);
  EXPECT_EQ(s.p99, 99);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  const std::vector<double> ten{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(percentile(ten, 50), 5);
  EXPECT_EQ(percentile(ten, 99), 10);  // nearest rank: ceil(9.9) = 10th value
  EXPECT_EQ(percentile(ten, 90), 9);
  EXPECT_EQ(percentile(ten, 0), 1);
  EXPECT_EQ(percentile(ten, 100), 10);
  const std::vector<double> same(7, 0.1);
  EXPECT_EQ(summarize(same).mean, 0.1);  // exact, not 0.1 * 7 / 7
  const std::vector<double> one{4.5};
  EXPECT_EQ(summarize(one).p99, 4.5);
  EXPECT_THROW(summarize(std::vector<double>{}), InternalError);
}

TEST(Output, SummaryHasOneRowPerPointAndRanks) {
  const ExperimentSpec spec = make_spec(kStudy);
  const SweepGrid grid(spec);
  const StudyResult result = run_study(grid, {});
  const auto rows = lines_of(summary_csv(grid, result));
  ASSERT_EQ(rows.size(), 1 + grid.num_points());
  EXPECT_EQ(fields(rows[0]).size(), 20u);
  std::map<std::size_t, std::vector<int>> ranks;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const auto f = fields(rows[r]);
    ASSERT_EQ(f.size(), 20u) << rows[r];
    ranks[grid.scenario(std::stoul(f[0]))].push_back(std::stoi(f[19]));
    EXPECT_LE(std::stod(f[11]), std::stod(f[12]));  // p50 <= p99
  }
  for (auto& [scenario, r] : ranks) {
    std::sort(r.begin(), r.end());
    EXPECT_EQ(r.front(), 1);
  }
  const std::string text = text_summary(grid, result, 3);
  EXPECT_NE(text.find("vs ring"), std::string::npos);
  EXPECT_NE(text.find("more, see summary.csv"), std::string::npos);
}

TEST(Progress, PlainLinesAndEta) {
  std::ostringstream out;
  Progress progress(out, Progress::Style::Lines, "run x", 0.0);
  progress.start(100, 20, 10, 2);
  progress.advance(40, 4);
  progress.finish();
  const std::string text = out.str();
  EXPECT_NE(text.find("resuming, 2 of 10 trials"), std::string::npos) << text;
  EXPECT_NE(text.find("60% 6/10 trials"), std::string::npos) << text;
  EXPECT_NE(text.find("ETA"), std::string::npos) << text;
  EXPECT_NE(text.find("done"), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
  // Plain lines are throttled: many quick updates print only the first and the final line.
  std::ostringstream throttled;
  Progress slow(throttled, Progress::Style::Lines, "run z", 3600.0);
  slow.start(100, 0, 100, 0);
  for (int i = 0; i < 100; ++i) slow.advance(1, 1);
  slow.finish();
  EXPECT_EQ(lines_of(throttled.str()).size(), 2u) << throttled.str();
  std::ostringstream bar;
  Progress tty(bar, Progress::Style::Bar, "run y", 0.0);
  tty.start(10, 0, 10, 0);
  tty.finish();
  EXPECT_NE(bar.str().find("\r["), std::string::npos);
  EXPECT_EQ(format_eta(3725), "1 h 02 min");
  EXPECT_EQ(format_eta(185), "3 min 05 s");
  EXPECT_EQ(format_eta(12.4), "12 s");
}

TEST(RunCommand, WritesTheFilesAndRejectsBadSpecs) {
  const fs::path dir = fresh_dir("cli");
  const std::string spec = std::string(COLLSIM_TEST_DATA_DIR) + "/experiments/good.yaml";
  std::ostringstream out, err;
  EXPECT_EQ(run_cli({"run", spec, "--out", dir.string(), "--quiet"}, out, err), 0) << err.str();
  for (const char* file : {"results.csv", "summary.csv", "timing.csv", "config.resolved.yaml"}) {
    EXPECT_TRUE(fs::exists(dir / file)) << file;
  }
  EXPECT_FALSE(fs::exists(checkpoint_path(dir)));
  std::ostringstream out2, err2;
  EXPECT_EQ(run_cli({"run", "/no/such.yaml"}, out2, err2), 2);
  EXPECT_NE(err2.str().find("/no/such.yaml"), std::string::npos);
  // Plot scripts run after the files are written; a failing one makes the exit code 3 (README, "Exit codes").
  const std::string plotted = std::string(COLLSIM_TEST_DATA_DIR) + "/experiments/with_plot.yaml";
  const fs::path plot_dir = fresh_dir("plot");
  std::ostringstream out4, err4;
  EXPECT_EQ(run_cli({"run", plotted, "--out", plot_dir.string(), "--quiet"}, out4, err4), 0) << err4.str();
  EXPECT_EQ(read(plot_dir / "plotted.txt"), "2 points\n");
  const fs::path fail_dir = fresh_dir("plot_fail");
  EXPECT_EQ(run_cli({"run", plotted, "--out", fail_dir.string(), "--quiet"}, out4, err4), 3);
  EXPECT_TRUE(fs::exists(fail_dir / "results.csv"));
  const fs::path skip_dir = fresh_dir("plot_skip");
  EXPECT_EQ(run_cli({"run", plotted, "--out", skip_dir.string(), "--quiet", "--no-plot"}, out4, err4), 0);
  EXPECT_FALSE(fs::exists(skip_dir / "plotted.txt"));
  for (const auto& d : {plot_dir, fail_dir, skip_dir}) fs::remove_all(d);
  std::ostringstream help, err3;
  EXPECT_EQ(run_cli({"run", "--help"}, help, err3), 0);
  EXPECT_NE(help.str().find("--out"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace collsim
