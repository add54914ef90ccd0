// `engine: auto` (replay where it models the topology, simgrid elsewhere) and `collsim run
// --dry-run` (plan_study).
#include "collsim/experiments/study_plan.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "collsim/experiments/cli.hpp"
#include "collsim/experiments/output.hpp"
#include "collsim/experiments/resource_estimate.hpp"
#include "collsim/experiments/sweep.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/topology.hpp"

namespace collsim {
namespace {

namespace fs = std::filesystem;

ExperimentSpec make_spec(const std::string& text) {
  ExperimentSpec spec = parse_spec(text, "test.yaml", {});
  validate(spec);
  return spec;
}

// Expects a ConfigError from parse + validate whose message contains every fragment.
void expect_error(const std::string& text, std::initializer_list<std::string> fragments) {
  try {
    make_spec(text);
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    for (const auto& f : fragments) EXPECT_NE(message.find(f), std::string::npos) << "missing '" << f << "' in: " << message;
  }
}

// Stands in for any engine: finishes 1 ms after the last arrival, and counts its runs, so the
// tests need neither SimGrid nor its run time.
class CountingEngine final : public Engine {
 public:
  CountingEngine(std::string name, std::map<std::string, int>& runs) : name_(std::move(name)), runs_(runs) {}
  std::string_view name() const override { return name_; }
  RunResult run(const Schedule& schedule, const RunConfig& config) override {
    ++runs_[name_];
    RunResult r;
    r.engine = name_;
    r.last_arrival_s = config.arrival_s.empty() ? 0.0 : *std::max_element(config.arrival_s.begin(), config.arrival_s.end());
    r.finish_s.assign(schedule.n, r.last_arrival_s + 1e-3);
    r.time_s = r.last_arrival_s + 1e-3;
    r.time_after_last_arrival_s = 1e-3;
    return r;
  }

 private:
  std::string name_;
  std::map<std::string, int>& runs_;
};

EngineFactory counting_factory(std::map<std::string, int>& runs) {
  return [&runs](std::string_view name) { return std::make_unique<CountingEngine>(std::string(name), runs); };
}

// n = 16 uses two nodes of the clusters: large enough for a leaf layout, small enough to be fast.
const std::string kClusterStudy =
    "name: whatif\n"
    "algorithms: [stragglar]\n"
    "n: 16\n"
    "sizes: 1MiB\n"
    "topology: [cluster_h100_1024, cluster_h100_1024_2to1]\n"
    "delays: [0, 1ms]\n"
    "engine: auto\n";

// auto is replay everywhere: the replay engine shares bandwidth max-min fairly, so it models
// oversubscribed fabrics too (specs written when auto meant SimGrid there still run).
TEST(AutoEngine, ResolvesToReplayOnEveryTopology) {
  const ExperimentSpec spec = make_spec(kClusterStudy);
  ASSERT_EQ(spec.resolved_engines.size(), 2u);
  EXPECT_EQ(spec.engine_at(0, 0), "replay");
  EXPECT_EQ(spec.engine_at(0, 1), "replay");
  EXPECT_EQ(resolve_engine_name("closed_form"), "closed_form");
  EXPECT_EQ(resolve_engine_name("auto"), "replay");


  // Explicit engines are kept as written, next to auto where they differ from it.
  const ExperimentSpec both = make_spec(
      "name: t\nalgorithms: [ring]\nn: 16\ntopology: [nvswitch, cluster_h100_1024_2to1]\nengine: [auto, closed_form]\n");
  EXPECT_EQ(both.engine_at(0, 0), "replay");
  EXPECT_EQ(both.engine_at(1, 0), "closed_form");
  EXPECT_EQ(both.engine_at(0, 1), "replay");
}

TEST(AutoEngine, ResultsAndResolvedYamlNameTheEngineThatRan) {
  const ExperimentSpec spec = make_spec(kClusterStudy);
  const SweepGrid grid(spec);
  std::map<std::string, int> runs;
  RunnerOptions options;
  options.engine_factory = counting_factory(runs);
  const StudyResult result = run_study(grid, options);
  const std::string csv = results_csv(grid, result);
  EXPECT_NE(csv.find(",cluster_h100_1024,replay,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",cluster_h100_1024_2to1,replay,"), std::string::npos) << csv;
  EXPECT_EQ(csv.find(",auto,"), std::string::npos) << csv;
  // 2 algorithms (ring added) x 2 delays per engine; the delay-0 run is the no-delay reference
  // of the 1 ms point, so nothing else runs.
  EXPECT_EQ(runs["replay"], 8);
  EXPECT_EQ(runs.count("simgrid"), 0u);
  const std::string yaml = resolved_yaml(spec);
  EXPECT_NE(yaml.find("engine: [auto]"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("auto ran cluster_h100_1024: replay, cluster_h100_1024_2to1: replay"), std::string::npos) << yaml;
  // The resolved file is a spec that runs the same study.
  EXPECT_EQ(make_spec(yaml).resolved_engines, spec.resolved_engines);
}

TEST(AutoEngine, NoDelayReferenceIsSimulatedWhenNoPointHasDelayZero) {
  const ExperimentSpec spec = make_spec("name: t\nalgorithms: [ring]\nn: 8\ndelays: [1ms, 2ms]\n");
  const SweepGrid grid(spec);
  std::map<std::string, int> runs;
  RunnerOptions options;
  options.engine_factory = counting_factory(runs);
  const StudyResult result = run_study(grid, options);
  EXPECT_EQ(runs["replay"], 3);  // two delays and one shared no-delay reference
  EXPECT_DOUBLE_EQ(result.points[0].time_no_delay_s, 1e-3);
}

TEST(AutoEngine, BadEngineNamesAndCombinations) {
  const std::string minimal = "name: t\nalgorithms: [ring]\nn: 16\n";
  expect_error(minimal + "engine: [auto, warp]\n", {"engine[1]", "line 4", "'warp'", "auto"});
  expect_error(minimal + "engine: Auto\n", {"engine", "line 4", "'Auto'", "known: closed_form, replay, simgrid, auto"});
  // auto is replay on an NVSwitch: listing replay as well would give two identical rows.
  expect_error(minimal + "engine: [replay, auto]\n", {"engine[1]", "line 4", "both run replay", "nvswitch"});
  expect_error(minimal + "topology: cluster_h100_1024_2to1\nengine: [auto, replay]\n",
               {"engine[1]", "line 5", "both run replay"});
  // SimGrid next to auto on an oversubscribed fabric: two engines, a cross-check, accepted.
  EXPECT_EQ(make_spec(minimal + "topology: cluster_h100_1024_2to1\nengine: [auto, simgrid]\n").engine_at(1, 0),
            "simgrid");
  EXPECT_THROW(make_engine("auto"), ConfigError);
}

TEST(StudyPlan, CountsPointsRunsAndEngines) {
  const ExperimentSpec spec = make_spec(
      "name: t\nalgorithms: [stragglar, recursive_halving_doubling]\nn: [8, 16]\nsizes: [1MiB, 1GiB]\n"
      "topology: [nvswitch, cluster_h100_1024_2to1]\ndelays: [0, 1ms, 2ms]\nengine: auto\ntrials: 3\n");
  const SweepGrid grid(spec);
  std::map<std::string, int> runs;
  const StudyPlan plan = plan_study(grid, counting_factory(runs));
  EXPECT_EQ(plan.points, 3u * 2 * 2 * 2 * 3);  // algorithms (ring added) x n x sizes x topologies x delays
  EXPECT_EQ(plan.active_points, plan.points);
  EXPECT_EQ(plan.runs, plan.points * 3);
  EXPECT_EQ(plan.work_units, plan.points);     // 3 trials fit one unit
  EXPECT_EQ(plan.topologies, 4u);              // (topology, n); no model file, so sizes share links
  EXPECT_EQ(plan.engines, (std::vector<std::string>{"replay"}));
  EXPECT_TRUE(runs.empty()) << "a plan simulates nothing";
  // An engine that cannot be made fails the plan.
  const EngineFactory none = [](std::string_view) { return std::unique_ptr<Engine>(); };
  EXPECT_THROW(plan_study(grid, none), ConfigError);
}

// The memory estimate counts the event-driven engines' index of the rank-rounds where they build
// it (a contended fabric, or SimGrid): 16 bytes per rank-round, as large as the schedule on a ring.
TEST(ResourceEstimate, CountsRankRoundsAndTheEventIndexWhereItIsBuilt) {
  AlgorithmOptions options;
  options.n = 8;
  const auto ring = estimate_schedule("ring", options);
  ASSERT_TRUE(ring);
  EXPECT_EQ(ring->transfers, 2.0 * 7 * 8);    // 2(n-1) rounds of n transfers
  EXPECT_EQ(ring->rank_rounds, 2.0 * 7 * 8);  // each rank sends and receives in every round
  EXPECT_EQ(ring->listed_transfers, 0.0);
  EXPECT_EQ(run_bytes(*ring, false), ring->transfers * sizeof(Transfer));
  EXPECT_EQ(run_bytes(*ring, true), 2 * ring->transfers * sizeof(Transfer));
  // NVLS: the switch rank takes part in 2n transfers of a round (n in the first), listed.
  const auto nvls = estimate_schedule("nvls", options);
  ASSERT_TRUE(nvls);
  EXPECT_EQ(nvls->listed_transfers, nvls->transfers);  // every transfer has the switch at one end
  EXPECT_GT(run_bytes(*nvls, true), run_bytes(*nvls, false) + 16 * nvls->rank_rounds);
  // Past n = 512 each count is extrapolated: a ring at 1,024 within 1 %.
  options.n = 1024;
  const auto large = estimate_schedule("ring", options);
  ASSERT_TRUE(large);
  EXPECT_NEAR(large->transfers, 2.0 * 1023 * 1024, 0.01 * 2.0 * 1023 * 1024);
  EXPECT_NEAR(large->rank_rounds, 2.0 * 1023 * 1024, 0.01 * 2.0 * 1023 * 1024);

  EXPECT_FALSE(ring->shares_ports);
  EXPECT_TRUE(nvls->shares_ports);  // the switch rank receives from every GPU in a round
  const Topology flat = resolve_topology("nvswitch", 16, LinkModel{});
  const Topology contended = resolve_topology("cluster_h100_1024_2to1", 16, LinkModel{});
  EXPECT_FALSE(make_engine("replay")->builds_event_index(flat, false));
  // A rank sending or receiving twice in a round uses its own link twice: the event path.
  EXPECT_TRUE(make_engine("replay")->builds_event_index(flat, true));
  EXPECT_TRUE(make_engine("replay")->builds_event_index(contended, false));
  EXPECT_FALSE(make_engine("closed_form")->builds_event_index(contended, true));
  // The plan's largest run: the index only on the contended fabric.
  for (const auto& [topology, index] : {std::pair{"nvswitch", false}, std::pair{"cluster_h100_1024_2to1", true}}) {
    const ExperimentSpec spec = make_spec(
        fmt::format("name: t\nalgorithms: [ring]\nn: 16\nsizes: 1MiB\ntopology: {}\nengine: replay\n", topology));
    const SweepGrid grid(spec);
    const StudyPlan plan = plan_study(grid);
    EXPECT_EQ(plan.max_run_bytes, (index ? 2 : 1) * plan.max_schedule_bytes) << topology;
  }
  // Hierarchical rows are estimated with the topology's node size and pipelined ones with their
  // depth for the size (0 before: generated without a node size, they supported no n), and the
  // trees' index counts on a 1:1 cluster, whose links their rank-rounds use twice.
  const ExperimentSpec spec = make_spec(
      "name: t\nalgorithms: [nccl_tree]\nn: 64\nsizes: [1MiB, 1GiB]\ntopology: cluster_h100_1024\nbaseline: nccl_tree\n");
  const SweepGrid grid(spec);
  const StudyPlan plan = plan_study(grid);
  AlgorithmOptions tree;
  tree.n = 64;
  tree.gpus_per_node = 8;
  set_sizing(tree, resolve_topology("cluster_h100_1024", 64, LinkModel{}), 1024.0 * 1024 * 1024);
  EXPECT_EQ(plan.max_schedule_bytes, generate_schedule("nccl_tree", tree).num_transfers() * sizeof(Transfer));
  EXPECT_GT(plan.max_run_bytes, 1.5 * plan.max_schedule_bytes);
  EXPECT_NE(plan.largest_run.find("nccl_tree at n = 64 on cluster_h100_1024"), std::string::npos) << plan.largest_run;
}

// The samples an estimate extrapolates from keep the run's share of late ranks: k = 300 of n =
// 1,024 was counted as k = 300 of n = 256 and refused as out of range, a valid run turned away.
TEST(ResourceEstimate, LateRanksScaleWithTheSampledN) {
  AlgorithmOptions options;
  options.n = 1024;
  options.late_ranks = 300;
  const auto estimate = estimate_schedule("stragglar_online", options);
  ASSERT_TRUE(estimate);
  const double exact = static_cast<double>(generate_schedule("stragglar_online", options).num_transfers());
  EXPECT_NEAR(estimate->transfers, exact, 0.05 * exact);
  options.late_ranks = 1023;  // the largest k: n-1 at every sample
  EXPECT_TRUE(estimate_schedule("stragglar_online", options));
}

// A study whose largest run cannot fit is refused before anything is written, naming that run
// and the estimate (the default limit is the machine's memory; --max-run-memory sets one).
TEST(StudyPlan, RunRefusesAStudyWhoseLargestRunDoesNotFit) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("collsim_test_run_memory_{}", ::getpid());
  const fs::path spec = fs::temp_directory_path() / fmt::format("collsim_test_run_memory_{}.yaml", ::getpid());
  fs::remove_all(dir);
  std::ofstream(spec) << "name: t\nalgorithms: [ring]\nn: [2048, 16]\nsizes: 1MiB\ntopology: nvswitch\n";
  std::ostringstream out, err;
  EXPECT_EQ(run_cli({"run", spec.string(), "--max-run-memory", "64MiB", "--out", dir.string()}, out, err), 2);
  for (const char* part : {"ring at n = 2048 on nvswitch", "128.3 MiB", "--max-run-memory 64MiB"}) {
    EXPECT_NE(err.str().find(part), std::string::npos) << part << " in " << err.str();
  }
  EXPECT_FALSE(fs::exists(dir));
  std::ostringstream out2, err2;
  EXPECT_EQ(run_cli({"run", spec.string(), "--max-run-memory", "0", "--out", dir.string()}, out2, err2), 2);
  EXPECT_NE(err2.str().find("--max-run-memory: 0 must be positive"), std::string::npos) << err2.str();
  // Within the limit it runs.
  std::ostringstream out3, err3;
  EXPECT_EQ(run_cli({"run", spec.string(), "--max-run-memory", "1GiB", "--quiet", "--no-plot", "--out", dir.string()},
                    out3, err3),
            0)
      << err3.str();
  EXPECT_TRUE(fs::exists(dir / "results.csv"));
  fs::remove_all(dir);
  fs::remove(spec);
}

TEST(StudyPlan, DryRunWritesNothing) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("collsim_test_dry_run_{}", ::getpid());
  fs::remove_all(dir);
  const std::string spec = std::string(COLLSIM_TEST_DATA_DIR) + "/experiments/good.yaml";
  std::ostringstream out, err;
  EXPECT_EQ(run_cli({"run", spec, "--dry-run", "--out", dir.string()}, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("dry run"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("nothing written"), std::string::npos) << out.str();
  EXPECT_FALSE(fs::exists(dir));
  // A bad spec fails the dry run as it fails a run.
  const fs::path bad = fs::temp_directory_path() / fmt::format("collsim_test_dry_run_bad_{}.yaml", ::getpid());
  std::ofstream(bad) << "name: t\nalgorithms: [ring]\nn: 4\nengine: warp\n";
  std::ostringstream out2, err2;
  EXPECT_EQ(run_cli({"run", bad.string(), "--dry-run"}, out2, err2), 2);
  EXPECT_NE(err2.str().find("'warp'"), std::string::npos) << err2.str();
  fs::remove(bad);
  std::ostringstream help, err3;
  EXPECT_EQ(run_cli({"run", "--help"}, help, err3), 0);
  EXPECT_NE(help.str().find("--dry-run"), std::string::npos);
}

// The no-delay reference of a delayed point is the delay-0 point of the same scenario.
TEST(NoDelayReference, DelaySweepPointsUseTheDelayZeroPoint) {
  const ExperimentSpec spec = make_spec("name: t\nalgorithms: [stragglar]\nn: [8, 16]\ndelays: [0, 1ms, 2ms]\n");
  const SweepGrid grid(spec);
  const std::vector<std::size_t> refs = no_delay_references(grid);
  ASSERT_EQ(refs.size(), grid.num_points());
  for (std::size_t i = 0; i < grid.num_points(); ++i) {
    const Point p = grid.point(i);
    if (p.arrival == 0) {
      EXPECT_EQ(refs[i], kNoReference) << i;
      continue;
    }
    ASSERT_NE(refs[i], kNoReference) << i;
    const Point r = grid.point(refs[i]);
    EXPECT_EQ(r.arrival, 0u);
    EXPECT_EQ(std::tie(r.algorithm, r.n, r.size, r.topology, r.engine, r.start),
              std::tie(p.algorithm, p.n, p.size, p.topology, p.engine, p.start));
  }
}

TEST(NoDelayReference, NoneWithoutAnAllZeroPointOfTheSameStraggler) {
  for (const char* text : {"name: t\nalgorithms: [ring]\nn: 8\ndelays: [1ms, 2ms]\n",
                           "name: t\nalgorithms: [ring]\nn: 8\ntrials: 3\narrival:\n"
                           "  - {label: a, model: stragglers, rank: 7, delay: {distribution: lognormal, median: 1ms, mean: 2ms}}\n"
                           "  - {label: b, model: stragglers, rank: 7, delay: 1ms}\n"}) {
    const ExperimentSpec spec = make_spec(text);
    const SweepGrid grid(spec);  // (keeps a pointer to the spec)
    for (std::size_t r : no_delay_references(grid)) EXPECT_EQ(r, kNoReference) << text;
  }
  // A zero-delay straggler at rank 3 is the reference of a delayed rank-3 point of a
  // straggler-aware algorithm, not of a rank-5 one; Ring's schedule ignores the straggler.
  const ExperimentSpec spec = make_spec(
      "name: t\nalgorithms: [stragglar]\nn: 8\narrival:\n"
      "  - {label: zero, model: stragglers, rank: 3, delay: 0}\n"
      "  - {label: same, model: stragglers, rank: 3, delay: 1ms}\n"
      "  - {label: other, model: stragglers, rank: 5, delay: 1ms}\n");
  const SweepGrid grid(spec);
  const std::vector<std::size_t> refs = no_delay_references(grid);
  for (std::size_t i = 0; i < grid.num_points(); ++i) {
    const Point p = grid.point(i);
    const bool stragglar = spec.algorithms[p.algorithm] == "stragglar";
    const bool expect_reference = p.arrival == 1 || (p.arrival == 2 && !stragglar);
    EXPECT_EQ(refs[i] != kNoReference, expect_reference) << spec.algorithms[p.algorithm] << " arrival " << p.arrival;
  }
}

// The second of two processes, as mpirun -np 2 would run it: it keeps what it would send.
class SecondOfTwo final : public WorkSplit {
 public:
  int rank() const override { return 1; }
  int size() const override { return 2; }
  void broadcast(std::string& /*bytes*/) override {}
  void send_to_root(std::string message) override { sent.push_back(std::move(message)); }
  std::optional<std::string> receive(bool /*wait*/) override { return std::nullopt; }
  void finish_sends() override {}
  void abort(int /*code*/) override {}
  std::vector<std::string> sent;
};

// Under MPI the delay-0 and the delayed point of a scenario run in different processes; the one
// running the delayed point must not simulate the no-delay reference again (at thousands of
// GPUs that doubles its time), since the root takes it from the delay-0 point.
TEST(NoDelayReference, AProcessRunningOnlyTheDelayedPointDoesNotSimulateIt) {
  const ExperimentSpec spec = make_spec("name: t\nalgorithms: [ring]\nn: 8\ndelays: [0, 1ms]\n");
  const SweepGrid grid(spec);
  ASSERT_EQ(make_units(grid).size(), 2u);  // unit 1 (the 1 ms point) is the second process's
  std::map<std::string, int> runs;
  SecondOfTwo split;
  RunnerOptions options;
  options.engine_factory = counting_factory(runs);
  options.split = &split;
  (void)run_study(grid, options);
  EXPECT_EQ(runs["replay"], 1);
  EXPECT_EQ(split.sent.size(), 1u);
}

}  // namespace
}  // namespace collsim
