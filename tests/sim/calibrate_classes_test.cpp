// Per-link-class calibration: coefficients on a two-class cluster, recovery of (alpha, beta) per
// class and gamma from replay-engine "measurements", classes the data do not identify.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/formats/model_file.hpp"
#include "collsim/models/topology.hpp"
#include "collsim/sim/calibrate.hpp"
#include "collsim/sim/replay_engine.hpp"
#include "collsim/sim/schedule_cost.hpp"
#include "test_support.hpp"

namespace collsim {
namespace {

using test::TempDir;
using test::error_of;
using test::expect_contains;

// The ground truth: 2 nodes x 4 GPUs, NVLink fast, network slow, a visible reduction cost.
constexpr double kAlphaNvl = 3e-6;
constexpr double kBandwidthNvl = 360e9;
constexpr double kAlphaNet = 12e-6;
constexpr double kBandwidthNet = 45e9;
constexpr double kGamma = 0.25e-12;
constexpr std::uint32_t kGpusPerNode = 4;

ClusterSpec truth_spec() {
  ClusterSpec c;
  c.gpus_per_node = kGpusPerNode;
  c.nvlink_latency_s = kAlphaNvl;
  c.nvlink_bandwidth_Bps = kBandwidthNvl;
  c.network_latency_s = kAlphaNet;
  c.nic_bandwidth_Bps = kBandwidthNet;
  return c;
}

// The calibration topology file: the same shape, deliberately wrong numbers (only the start of
// the critical-path search; the fit must not depend on them).
constexpr const char* kClusterYaml =
    "kind: cluster\n"
    "cluster:\n"
    "  gpus_per_node: 4\n"
    "  nvlink_bandwidth: 450GBps\n"
    "  nvlink_latency: 5us\n"
    "  nic_bandwidth: 400Gbps\n"
    "  network_latency: 5us\n";

// What a schedule is timed at by the replay engine on the true cluster.
double replay_time_s(const Schedule& schedule, double size_bytes) {
  RunConfig config;
  config.size_bytes = size_bytes;
  config.topology = make_cluster(schedule.n, truth_spec(), kGamma);
  config.arrival_s.assign(schedule.n, 0.0);
  return make_replay_engine()->run(schedule, config).time_s;
}

struct Measured {
  std::string csv_algorithm;  // as collsim-cuda names it
  Collective collective;
  std::string algorithm;      // schedule
  std::uint32_t n;
};

// One collsim-cuda CSV row per (measurement, size), time = replay time * (1 + noise), noise
// uniform in [-noise, +noise] from a seeded generator.
std::string synthetic_csv(const std::vector<Measured>& measured, double noise, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-noise, noise);
  std::string csv =
      "algorithm,n,size_bytes,delay_s,straggler,iteration,time_s,algbw_GBps,busbw_GBps,device,driver_version,"
      "nccl_version\n";
  for (const auto& m : measured) {
    const Schedule s = collective_schedule(m.collective, m.n, m.algorithm);
    for (double size = 1024; size <= 1024.0 * 1024 * 1024; size *= 4) {
      const double t = replay_time_s(s, size) * (1.0 + (noise > 0 ? u(rng) : 0.0));
      csv += fmt::format("{},{},{},0,-1,0,{},0,0,H100,550,2.21\n", m.csv_algorithm, m.n, size, t);
    }
  }
  return csv;
}

const std::vector<Measured> kBothClasses{
    {"ring", Collective::AllReduce, "ring", 4},
    {"ring", Collective::AllReduce, "ring", 8},
    {"recursive_halving_doubling", Collective::AllReduce, "recursive_halving_doubling", 8},
    {"p2p", Collective::SendRecv, "sendrecv", 2},
    {"p2p", Collective::SendRecv, "sendrecv", 8},
};

const std::vector<Measured> kOneNode{
    {"ring", Collective::AllReduce, "ring", 4},
    {"p2p", Collective::SendRecv, "sendrecv", 2},
};

struct Inputs {
  TempDir dir{"collsim_calibrate_classes_test"};
  std::filesystem::path csv, topology;
  CalibrationOptions options;
};

void prepare(Inputs& s, const std::vector<Measured>& measured, double noise, std::uint64_t seed) {
  s.csv = s.dir.path() / "measurements.csv";
  s.topology = s.dir.path() / "two_nodes.yaml";
  std::ofstream(s.csv) << synthetic_csv(measured, noise, seed);
  std::ofstream(s.topology) << kClusterYaml;
  s.options.topology = s.topology.string();
}

const LinkClassFit& fitted(const CalibrationReport& r, const std::string& name) {
  for (const auto& c : r.class_fit->classes) {
    if (c.name == name) return c;
  }
  throw InternalError("no class " + name);
}

double rel(double got, double want) { return std::fabs(got / want - 1.0); }

TEST(ClassCoefficients, LinearTimeEqualsTheReplayEngineOnACluster) {
  // At the true parameters the per-class counts reproduce the engine's time exactly, for
  // schedules whose critical path stays in one node, crosses the network, or alternates.
  const ClusterSpec spec = truth_spec();
  ClassFitResult at;
  at.classes = {{kNvlinkClass, true, LinkModel{kAlphaNvl, kBandwidthNvl, kGamma}, 0},
                {kNetworkClass, true, LinkModel{kAlphaNet, kBandwidthNet, kGamma}, 0}};
  at.gamma_s_per_byte = kGamma;
  for (const auto& m : kBothClasses) {
    const Schedule s = collective_schedule(m.collective, m.n, m.algorithm);
    const Topology topo = make_cluster(m.n, spec, kGamma);
    for (double size : {8.0, 65536.0, 1e9}) {
      const ClassCostCoefficients c = schedule_cost_coefficients(s, size, topo);
      ASSERT_EQ(c.latency.size(), 2u);
      EXPECT_NEAR(linear_time_s(c, at) / replay_time_s(s, size), 1.0, 1e-12) << m.algorithm << " n=" << m.n << " " << size;
    }
  }
  // Ring on 8 GPUs in 2 nodes: every round waits for its network transfer (2(n-1) of them).
  const auto ring8 = schedule_cost_coefficients(collective_schedule(Collective::AllReduce, 8, "ring"), 8e6,
                                                make_cluster(8, spec, kGamma));
  EXPECT_DOUBLE_EQ(ring8.latency[1], 14.0);
  EXPECT_DOUBLE_EQ(ring8.latency[0], 0.0);
  EXPECT_DOUBLE_EQ(ring8.bytes[1], 14.0 * 1e6);
  // Inside one node only NVLink is crossed.
  const auto ring4 = schedule_cost_coefficients(collective_schedule(Collective::AllReduce, 4, "ring"), 4e6,
                                                make_cluster(4, spec, kGamma));
  EXPECT_DOUBLE_EQ(ring4.latency[0], 6.0);
  EXPECT_DOUBLE_EQ(ring4.latency[1], 0.0);
  EXPECT_DOUBLE_EQ(ring4.bytes[1], 0.0);
}

TEST(ClassCoefficients, RejectsTooSmallATopology) {
  const Schedule s = collective_schedule(Collective::AllReduce, 8, "ring");
  EXPECT_THROW(schedule_cost_coefficients(s, 1024, make_cluster(4, truth_spec())), ConfigError);
  EXPECT_THROW(schedule_cost_coefficients(s, -1, make_cluster(8, truth_spec())), ConfigError);
}

TEST(ClassCalibration, RecoversBothClassesExactlyWithoutNoise) {
  Inputs s;
  prepare(s, kBothClasses, 0.0, 1);
  const std::vector<std::filesystem::path> files{s.csv};
  const CalibrationReport r = run_calibration(files, s.options);
  ASSERT_TRUE(r.class_fit.has_value());
  EXPECT_EQ(r.link_classes, (std::vector<std::string>{"nvlink", "network"}));
  const auto& nvl = fitted(r, "nvlink");
  const auto& net = fitted(r, "network");
  ASSERT_TRUE(nvl.identified && net.identified);
  EXPECT_LT(rel(nvl.link.latency_s, kAlphaNvl), 1e-6);
  EXPECT_LT(rel(nvl.link.bandwidth_Bps, kBandwidthNvl), 1e-6);
  EXPECT_LT(rel(net.link.latency_s, kAlphaNet), 1e-6);
  EXPECT_LT(rel(net.link.bandwidth_Bps, kBandwidthNet), 1e-6);
  EXPECT_TRUE(r.class_fit->gamma_fitted);
  EXPECT_LT(rel(r.class_fit->gamma_s_per_byte, kGamma), 1e-6);
  EXPECT_LT(r.fit_stats.max_abs, 1e-9);
}

TEST(ClassCalibration, RecoversBothClassesWithThreePercentNoise) {
  // Tolerance 5% on every alpha and bandwidth under 3% uniform noise on 5 x 11 rows (observed:
  // at most 1.2% over seeds 1..5). gamma is not checked here: at 0.25 ps/B it is a small term next
  // to beta (2.8 and 22 ps/B) and its noisy estimate is off by up to 50%; the exact test checks it.
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    Inputs s;
    prepare(s, kBothClasses, 0.03, seed);
    const std::vector<std::filesystem::path> files{s.csv};
    const CalibrationReport r = run_calibration(files, s.options);
    ASSERT_TRUE(r.class_fit.has_value());
    const auto& nvl = fitted(r, "nvlink");
    const auto& net = fitted(r, "network");
    ASSERT_TRUE(nvl.identified && net.identified);
    EXPECT_LT(rel(nvl.link.latency_s, kAlphaNvl), 0.05) << "seed " << seed << " " << nvl.link.latency_s;
    EXPECT_LT(rel(nvl.link.bandwidth_Bps, kBandwidthNvl), 0.05) << "seed " << seed << " " << nvl.link.bandwidth_Bps;
    EXPECT_LT(rel(net.link.latency_s, kAlphaNet), 0.05) << "seed " << seed << " " << net.link.latency_s;
    EXPECT_LT(rel(net.link.bandwidth_Bps, kBandwidthNet), 0.05) << "seed " << seed << " " << net.link.bandwidth_Bps;
    EXPECT_LT(r.fit_stats.max_abs, 0.06);
    // The recovery errors, for --gtest_output=xml (quoted in the calibration runbook).
    RecordProperty(fmt::format("seed{}_rel_errors_alpha_nvl_bw_nvl_alpha_net_bw_net_gamma", seed),
                   fmt::format("{:.4f} {:.4f} {:.4f} {:.4f} {:.4f}", rel(nvl.link.latency_s, kAlphaNvl),
                               rel(nvl.link.bandwidth_Bps, kBandwidthNvl), rel(net.link.latency_s, kAlphaNet),
                               rel(net.link.bandwidth_Bps, kBandwidthNet),
                               rel(r.class_fit->gamma_s_per_byte, kGamma)));
  }
}

TEST(ClassCalibration, WritesPerClassModelThatSimulationApplies) {
  Inputs s;
  prepare(s, kBothClasses, 0.0, 1);
  s.options.out_model = s.dir.path() / "cluster_box.yaml";
  const std::vector<std::filesystem::path> files{s.csv};
  const CalibrationReport r = run_calibration(files, s.options);
  const ModelFile back = read_model_file(s.options.out_model);
  ASSERT_EQ(back.link_classes.size(), 2u);
  EXPECT_TRUE(back.unidentified_classes.empty());
  EXPECT_EQ(back.provenance.topology, s.topology.string());
  // Applying the model to the calibration topology gives the true cluster's timing.
  Topology t = load_topology(s.topology.string(), 8);
  apply_model(back, 1e6, t);
  const Schedule ring = collective_schedule(Collective::AllReduce, 8, "ring");
  RunConfig config;
  config.size_bytes = 1e6;
  config.topology = t;
  config.arrival_s.assign(8, 0.0);
  EXPECT_NEAR(make_replay_engine()->run(ring, config).time_s / replay_time_s(ring, 1e6), 1.0, 1e-6);
  expect_contains(format_calibration_report(r), "network: alpha = ");
}

TEST(ClassCalibration, SingleNodeDataLeaveTheNetworkNotIdentified) {
  Inputs s;
  prepare(s, kOneNode, 0.0, 1);
  s.options.out_model = s.dir.path() / "one_node.yaml";
  const std::vector<std::filesystem::path> files{s.csv};
  const CalibrationReport r = run_calibration(files, s.options);
  ASSERT_TRUE(r.class_fit.has_value());
  EXPECT_TRUE(fitted(r, "nvlink").identified);
  EXPECT_LT(rel(fitted(r, "nvlink").link.bandwidth_Bps, kBandwidthNvl), 1e-6);
  EXPECT_FALSE(fitted(r, "network").identified);
  EXPECT_EQ(fitted(r, "network").link.bandwidth_Bps, 0.0);  // no made-up value
  const std::string text = format_calibration_report(r);
  expect_contains(text, "network: not identified");
  expect_contains(text, "link class 'network' not identified");
  const ModelFile back = read_model_file(s.options.out_model);
  ASSERT_EQ(back.link_classes.size(), 1u);
  EXPECT_EQ(back.link_classes[0].name, "nvlink");
  EXPECT_EQ(back.unidentified_classes, std::vector<std::string>{"network"});
  // Usable on one node (nvswitch has only nvlink), refused on the cluster.
  Topology box = make_nvswitch(4, LinkModel{});
  apply_model(back, 1e6, box);
  EXPECT_DOUBLE_EQ(box.link.bandwidth_Bps, back.link_classes[0].bandwidth_Bps);
  Topology cluster = load_topology(s.topology.string(), 8);
  expect_contains(error_of([&] { apply_model(back, 1e6, cluster); }), "did not identify it");
}

TEST(ClassCalibration, BadInputs) {
  Inputs s;
  prepare(s, kBothClasses, 0.0, 1);
  const std::vector<std::filesystem::path> files{s.csv};
  // Size regimes are single-class.
  CalibrationOptions regimes = s.options;
  regimes.regimes = 3;
  expect_contains(error_of([&] { run_calibration(files, regimes); }), "single-class topologies only");
  // A cross-prediction through a class no fitted row crosses.
  CalibrationOptions cross = s.options;
  cross.fit_on = {Collective::SendRecv};
  Inputs one;
  prepare(one, {{"p2p", Collective::SendRecv, "sendrecv", 2}, {"ring", Collective::AllReduce, "ring", 8}}, 0.0, 1);
  const std::vector<std::filesystem::path> one_files{one.csv};
  cross.topology = one.topology.string();
  expect_contains(error_of([&] { run_calibration(one_files, cross); }), "crosses link class 'network'");
  // Unknown topology.
  CalibrationOptions unknown = s.options;
  unknown.topology = "no_such_fabric";
  expect_contains(error_of([&] { run_calibration(files, unknown); }), "--topology no_such_fabric");
}

}  // namespace
}  // namespace collsim
