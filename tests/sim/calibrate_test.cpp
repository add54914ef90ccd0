#include "collsim/sim/calibrate.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/cuda_validate/measurement_csv.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/formats/nccl_log.hpp"
#include "collsim/models/topology.hpp"
#include "collsim/sim/nccl_choice.hpp"
#include "collsim/sim/replay_engine.hpp"
#include "collsim/sim/schedule_cost.hpp"
#include "sim_test_support.hpp"
#include "test_support.hpp"

namespace collsim {
namespace {

using test::TempDir;
using test::error_of;
using test::expect_contains;
using test::hand;
using test::tx;

std::filesystem::path log_path(const std::string& name) {
  return std::filesystem::path(COLLSIM_TEST_DATA_DIR) / "nccl-tests" / name;
}

const std::filesystem::path kAllReduce8 = log_path("h100-8gpu-allreduce-nvidia-exemplar.txt");
const std::filesystem::path kReduceScatter4 = log_path("h100-nvswitch-4gpu-reducescatter.txt");
const std::filesystem::path kAllGather4 = log_path("h100-nvswitch-4gpu-allgather.txt");

// A copy of `log` named `name` in `dir` with `header` before it: a log that names what NCCL ran.
std::filesystem::path log_with_header(const TempDir& dir, const std::filesystem::path& log, const std::string& name,
                                      const std::string& header) {
  std::ifstream in(log);
  const std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto path = dir.path() / name;
  std::ofstream(path) << header << body;
  return path;
}

LinkModel link(double alpha_s, double bandwidth_Bps, double gamma = 0) {
  LinkModel l;
  l.latency_s = alpha_s;
  l.bandwidth_Bps = bandwidth_Bps;
  l.gamma_s_per_byte = gamma;
  return l;
}

// The alpha-beta(-gamma) fit of one regime without a launch term: the model the synthetic
// measurements below are generated from (alpha paid per hop, nothing per launch).
CalibrationOptions alpha_beta_only() {
  CalibrationOptions options;
  options.regimes = 1;
  options.fit_launch = false;
  return options;
}

TEST(CollectiveSchedule, PicksThePhaseThatRan) {
  const Schedule ar = collective_schedule(Collective::AllReduce, 4, "ring");
  EXPECT_EQ(ar.phases.size(), 2u);
  const Schedule rs = collective_schedule(Collective::ReduceScatter, 4, "ring");
  ASSERT_EQ(rs.phases.size(), 1u);
  EXPECT_EQ(rs.phases[0].name(), "reduce_scatter");
  EXPECT_EQ(rs.num_rounds(), 3u);
  EXPECT_EQ(rs.num_chunks, 4u);
  const Schedule ag = collective_schedule(Collective::AllGather, 5, "ring");
  ASSERT_EQ(ag.phases.size(), 1u);
  EXPECT_EQ(ag.phases[0].name(), "all_gather");
  const Schedule sr = collective_schedule(Collective::SendRecv, 3, "ring");
  EXPECT_EQ(sr.num_rounds(), 1u);
  EXPECT_EQ(sr.num_transfers(), 3u);
  EXPECT_EQ(sr.num_chunks, 1u);
  expect_contains(error_of([] { collective_schedule(Collective::AllReduce, 4, "spiral"); }), "unknown algorithm 'spiral'");
  expect_contains(error_of([] { collective_schedule(Collective::AllReduce, 1, "ring"); }), "n = 1 must be at least 2");
  // An algorithm without a phase of that name (or not supporting n) cannot explain the log.
  EXPECT_THROW(collective_schedule(Collective::AllGather, 8, "recursive_doubling"), ScheduleError);
}

TEST(ScheduleCost, RingCountsMatchTheClosedForm) {
  const LinkModel at = link(3e-6, 450e9, 1e-11);
  for (const Rank n : {2u, 3u, 4u, 8u, 13u}) {
    const double s = 1 << 20;
    const CostCoefficients ar = schedule_cost_coefficients(collective_schedule(Collective::AllReduce, n, "ring"), s, at);
    EXPECT_DOUBLE_EQ(ar.latency, 2.0 * (n - 1));
    EXPECT_DOUBLE_EQ(ar.bytes, 2.0 * (n - 1) * s / n);
    EXPECT_DOUBLE_EQ(ar.reduce_bytes, (n - 1) * s / n);
    const CostCoefficients rs = schedule_cost_coefficients(collective_schedule(Collective::ReduceScatter, n, "ring"), s, at);
    EXPECT_DOUBLE_EQ(rs.latency, n - 1.0);
    EXPECT_DOUBLE_EQ(rs.bytes, (n - 1) * s / n);
    EXPECT_DOUBLE_EQ(rs.reduce_bytes, (n - 1) * s / n);
    const CostCoefficients ag = schedule_cost_coefficients(collective_schedule(Collective::AllGather, n, "ring"), s, at);
    EXPECT_DOUBLE_EQ(ag.latency, n - 1.0);
    EXPECT_DOUBLE_EQ(ag.reduce_bytes, 0.0);
    const CostCoefficients sr = schedule_cost_coefficients(collective_schedule(Collective::SendRecv, n, "ring"), s, at);
    EXPECT_DOUBLE_EQ(sr.latency, 1.0);
    EXPECT_DOUBLE_EQ(sr.bytes, s);
  }
}

TEST(ScheduleCost, ReducePathWinsTiesWhenGammaIsZero) {
  // With gamma = 0 the reduce and the copy paths tie; the walk must still report the reduce one,
  // or no fit could ever identify gamma.
  const CostCoefficients c =
      schedule_cost_coefficients(collective_schedule(Collective::ReduceScatter, 4, "ring"), 4096, link(1e-6, 1e11));
  EXPECT_DOUBLE_EQ(c.reduce_bytes, 3.0 * 1024);
}

TEST(ScheduleCost, AgreesWithTheReplayEngine) {
  // The linear form evaluated at any parameters equals an exact replay on a non-blocking NVSwitch.
  ReplayEngine replay;
  for (const Rank n : {2u, 4u, 7u, 8u}) {
    for (const double size : {64.0, 1048576.0, 3e9}) {
      for (const LinkModel& l : {link(3e-6, 450e9), link(7e-6, 322e9, 2e-12)}) {
        for (const Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}) {
          const Schedule s = collective_schedule(c, n, "ring");
          RunConfig config;
          config.size_bytes = size;
          config.topology = make_nvswitch(n, l);
          const double replayed = replay.run(s, config).time_s;
          const double linear = linear_time_s(schedule_cost_coefficients(s, size, l), l);
          EXPECT_NEAR(linear / replayed, 1.0, 1e-9) << collective_name(c) << " n=" << n << " size=" << size;
        }
      }
    }
  }
}

// Launches on the critical path: one for a fused collective, one per round with p2p_rounds;
// the linear form with the launch equals the replay engine charging the same launches.
TEST(ScheduleCost, CountsLaunchesAndAgreesWithTheReplayEngine) {
  const Schedule rs = collective_schedule(Collective::ReduceScatter, 4, "ring");
  EXPECT_DOUBLE_EQ(schedule_cost_coefficients(rs, 4096, link(1e-6, 1e11)).launches, 1.0);
  EXPECT_DOUBLE_EQ(
      schedule_cost_coefficients(rs, 4096, link(1e-6, 1e11), ExecutionCosts{ExecutionStyle::P2pRounds, 0.0}).launches, 3.0);
  ReplayEngine replay;
  for (const char* algorithm : {"ring", "stragglar", "recursive_halving_doubling"}) {
    const Schedule s = collective_schedule(Collective::AllReduce, 8, algorithm);
    for (const ExecutionStyle style : {ExecutionStyle::Fused, ExecutionStyle::P2pRounds}) {
      const LinkModel l = link(3e-6, 300e9, 1e-12);
      const ExecutionCosts execution{style, 20e-6};
      RunConfig config;
      config.size_bytes = 1e8;
      config.topology = make_nvswitch(8, l);
      config.execution = execution;
      const double replayed = replay.run(s, config).time_s;
      const CostCoefficients c = schedule_cost_coefficients(s, config.size_bytes, l, execution);
      EXPECT_NEAR(linear_time_s(c, l, execution.launch_s) / replayed, 1.0, 1e-9) << algorithm;
      EXPECT_GE(c.launches, 1.0);
    }
  }
}

TEST(ScheduleCost, RejectsBadSize) {
  EXPECT_THROW(schedule_cost_coefficients(collective_schedule(Collective::AllReduce, 4, "ring"), -1, LinkModel{}), ConfigError);
}

// The linear form at the parameters it was walked at, over an exact replay of `s` on a
// non-blocking NVSwitch with link `l`: 1 when the walk found the true critical path and charged
// it what the replay charges.
double linear_over_replay(const Schedule& s, double size_bytes, const LinkModel& l) {
  RunConfig config;
  config.size_bytes = size_bytes;
  config.topology = make_nvswitch(s.n, l);
  const double replayed = ReplayEngine().run(s, config).time_s;
  return linear_time_s(schedule_cost_coefficients(s, size_bytes, l), l) / replayed;
}

// A schedule whose longest path in hops is not its longest in bytes: rank 0 sends all four
// chunks to rank 1 at once while ranks 2 and 3 pass single chunks back and forth for three
// rounds. With a large alpha and a small buffer the three-hop chain is the critical path; a walk
// that compared paths by their bytes alone would report the one-hop transfer.
TEST(ScheduleCost, CriticalPathCountsLatencyWhenHopsAndBytesDisagree) {
  const Schedule s = hand(4, 4, 1, {{{tx(0, 1, 0, 4), tx(2, 3, 0)}, {tx(3, 2, 1)}, {tx(2, 3, 2)}}});
  const LinkModel l = link(10e-6, 1e11);
  const CostCoefficients c = schedule_cost_coefficients(s, 4096, l);
  EXPECT_DOUBLE_EQ(c.latency, 3.0);
  EXPECT_DOUBLE_EQ(c.bytes, 3.0 * 1024);
  EXPECT_NEAR(linear_over_replay(s, 4096, l), 1.0, 1e-9);
}

// With two ports a rank sends two transfers in one round; they share its NVSwitch port, so each
// takes as long as the port's bytes of the round (both chunks), not its own chunk's bytes.
TEST(ScheduleCost, TransfersSharingAPortAreChargedThePortsBytes) {
  const Schedule s = hand(3, 2, 2, {{{tx(0, 1, 0), tx(0, 2, 1)}}});
  const LinkModel l = link(3e-6, 450e9);
  const double size = 1 << 20;
  EXPECT_DOUBLE_EQ(schedule_cost_coefficients(s, size, l).bytes, size);
  EXPECT_NEAR(linear_over_replay(s, size, l), 1.0, 1e-9);
}

// A collsim-cuda CSV generated from known parameters through the ring closed form, three
// iterations per point with +-1% spread (the median is the exact value), delayed rows that must be
// ignored, and a native NCCL baseline explained by the ring schedule.
std::string synthetic_csv(const LinkModel& l) {
  std::string csv = "algorithm,n,size_bytes,delay_s,straggler,iteration,time_s,algbw_GBps,busbw_GBps,device,driver_version,nccl_version\n";
  for (const Rank n : {2u, 4u, 8u}) {
    for (double s = 1024; s <= 1024.0 * 1024 * 1024; s *= 4) {
      const double t = 2.0 * (n - 1) * (l.latency_s + s / n / l.bandwidth_Bps) + (n - 1) * s / n * l.gamma_s_per_byte;
      const char* algo = n == 8 ? "nccl_allreduce" : "ring";
      for (int it = 0; it < 3; ++it) {
        const double f = it == 0 ? 1.0 : (it == 1 ? 1.01 : 0.99);
        csv += fmt::format("{},{},{},0,-1,{},{},0,0,H100,550,2.21\n", algo, n, s, it, t * f);
      }
      csv += fmt::format("ring,{},{},0.005,{},0,{},0,0,H100,550,2.21\n", n, s, n - 1, t + 0.005);
    }
  }
  return csv;
}

TEST(RunCalibration, RecoversParametersFromOurCsvAndWritesFiles) {
  TempDir dir("collsim_calibrate_test");
  const LinkModel truth = link(4e-6, 300e9, 1.0 / 80e9);
  const auto csv_path = dir.path() / "measurements.csv";
  std::ofstream(csv_path) << synthetic_csv(truth);
  CalibrationOptions options;
  options.out_model = dir.path() / "out" / "box.yaml";
  std::filesystem::create_directories(dir.path() / "out");  // writers never create directories
  const std::vector<std::filesystem::path> files{csv_path};
  const CalibrationReport report = run_calibration(files, options);
  ASSERT_EQ(report.inputs.size(), 1u);
  EXPECT_EQ(report.inputs[0].format, "collsim-csv");
  EXPECT_EQ(report.inputs[0].rows, 3u * 11u);
  EXPECT_EQ(report.inputs[0].skipped, 3u * 11u);
  // All rows are ring all-reduces: gamma is proportional to beta's bytes, so it is absorbed.
  const LinkModel& fitted = report.model.link;
  EXPECT_NEAR(fitted.latency_s / truth.latency_s, 1.0, 1e-6);
  EXPECT_NEAR(fitted.bandwidth_Bps * (1.0 / truth.bandwidth_Bps + truth.gamma_s_per_byte / 2), 1.0, 1e-6);
  EXPECT_LT(report.fit_stats.max_abs, 1e-6);
  EXPECT_EQ(report.model.name, "box");
  for (const auto& p : report.points) EXPECT_EQ(p.algorithm, "ring");
  // Files: the model reads back equal, the CSV has the documented header, no temporaries remain.
  ASSERT_EQ(report.model_path, options.out_model);
  const ModelFile back = read_model_file(options.out_model);
  EXPECT_EQ(back.link.latency_s, fitted.latency_s);
  EXPECT_EQ(back.fit_rows.size(), report.points.size());
  EXPECT_EQ(back.provenance.sources.at(0).file, "measurements.csv");
  EXPECT_EQ(report.csv_path, dir.path() / "out" / "box_fit.csv");
  std::ifstream in(report.csv_path);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header,
            "source,line,collective,algorithm,n,size_bytes,measured_s,predicted_s,rel_error,predicted_single_s,"
            "rel_error_single,role,regime");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path() / "out")) ++entries;
  EXPECT_EQ(entries, 2u);
}

TEST(RunCalibration, ReadsWhatCollsimCudaWrites) {
  // The producer's own writer (cuda_validate) and this reader must agree on the schema.
  namespace cv = cuda_validate;
  TempDir dir("collsim_calibrate_test");
  const LinkModel truth = link(5e-6, 250e9);
  std::string csv = std::string(kMeasurementCsvHeader) + "\n";
  const auto add = [&](const std::string& algorithm, std::uint32_t n, std::uint64_t size, double delay, std::int64_t straggler,
                       double time, std::optional<Collective> collective, const std::string& launch = "gated") {
    for (std::uint32_t it = 0; it < 3; ++it) {
      MeasurementRow row;
      row.launch = launch;
      row.nccl_algo = "allreduce:tree";
      row.algorithm = algorithm;
      row.n = n;
      row.size_bytes = size;
      row.delay_s = delay;
      row.straggler = straggler;
      row.iteration = it;
      row.time_s = time * (it == 1 ? 1.01 : (it == 2 ? 0.99 : 1.0));  // the median is `time`
      row.device = "NVIDIA H100 80GB HBM3, SXM";
      row.driver_version = "13.0";
      row.nccl_version = "2.28.9";
      cv::compute_bandwidths(row, collective);
      csv += format_measurement_csv_row(row) + "\n";
    }
  };
  for (std::uint64_t s = 4096; s <= (1ull << 30); s *= 4) {
    const double ring = 14 * (truth.latency_s + static_cast<double>(s) / 8 / truth.bandwidth_Bps);
    add("ring", 8, s, 0.0, -1, ring, Collective::AllReduce);
    add("nccl", 8, s, 0.0, -1, ring, Collective::AllReduce);
    add("ring", 8, s, 1e-3, 7, ring + 1e-3, Collective::AllReduce);
    add("p2p", 2, s, 0.0, -1, truth.latency_s + static_cast<double>(s) / truth.bandwidth_Bps,
        Collective::SendRecv);
    add("reduce_kernel", 1, s, 0.0, -1, 1e-6 + static_cast<double>(s) * 1e-12, std::nullopt);
    // Host enqueue time included: must not move the medians of the gated rows.
    add("ring", 8, s, 0.0, -1, 3 * ring, Collective::AllReduce, "ungated");
  }
  add("empty_timed_run", 8, 4, 0.0, -1, 9e-6, std::nullopt);
  const auto path = dir.path() / "measurements.csv";
  std::ofstream(path) << csv;
  const std::vector<std::filesystem::path> files{path};
  const CalibrationReport r = run_calibration(files, alpha_beta_only());
  EXPECT_EQ(r.inputs[0].format, "collsim-csv");
  EXPECT_NEAR(r.model.link.latency_s / truth.latency_s, 1.0, 1e-9);
  EXPECT_NEAR(r.model.link.bandwidth_Bps / truth.bandwidth_Bps, 1.0, 1e-9);
  EXPECT_LT(r.fit_stats.max_abs, 1e-9);
  bool noted = false;
  for (const auto& note : r.notes) noted |= note.find("ungated rows not fitted") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(RunCalibration, MicroBenchmarksPredictCollectives) {
  // collsim-cuda's micro-benchmark file: p2p (one message), ReduceScatter among n-1 through NCCL,
  // the local reduction kernel; plus native NCCL AllReduce rows. Fit the link on p2p alone and
  // predict the collectives through the ring schedule.
  TempDir dir("collsim_calibrate_test");
  const LinkModel truth = link(3e-6, 400e9);
  std::string csv = "algorithm,n,size_bytes,delay_s,straggler,iteration,time_s,algbw_GBps,busbw_GBps,device,driver_version,nccl_version\n";
  for (double s = 1024; s <= 1024.0 * 1024 * 1024; s *= 8) {
    csv += fmt::format("p2p,2,{},0,-1,0,{},0,0,H100,13.0,2.28.9\n", s, truth.latency_s + s / truth.bandwidth_Bps);
    csv += fmt::format("reduce_scatter_nccl,7,{},0,-1,0,{},0,0,H100,13.0,2.28.9\n", s,
                       6 * (truth.latency_s + s / 7 / truth.bandwidth_Bps));
    csv += fmt::format("reduce_kernel,1,{},0,-1,0,{},0,0,H100,13.0,2.28.9\n", s, 2e-6 + s * 0.5e-12);
    csv += fmt::format("nccl,8,{},0,-1,0,{},0,0,H100,13.0,2.28.9\n", s, 14 * (truth.latency_s + s / 8 / truth.bandwidth_Bps));
  }
  const auto path = dir.path() / "measurements_micro.csv";
  std::ofstream(path) << csv;
  CalibrationOptions options = alpha_beta_only();
  options.fit_on = {Collective::SendRecv};
  const std::vector<std::filesystem::path> files{path};
  const CalibrationReport r = run_calibration(files, options);
  EXPECT_EQ(r.inputs[0].collective, "mixed");
  EXPECT_EQ(r.inputs[0].skipped, 7u);  // the reduce_kernel points
  EXPECT_NEAR(r.model.link.latency_s / truth.latency_s, 1.0, 1e-9);
  EXPECT_NEAR(r.model.link.bandwidth_Bps / truth.bandwidth_Bps, 1.0, 1e-9);
  ASSERT_EQ(r.sources.size(), 3u);  // one file, three (collective, n) groups
  EXPECT_TRUE(r.sources[0].fitted);
  EXPECT_EQ(r.sources[1].collective, Collective::ReduceScatter);
  EXPECT_EQ(r.sources[1].n, 7u);
  EXPECT_LT(r.sources[1].overall.max_abs, 1e-9);
  EXPECT_EQ(r.sources[2].collective, Collective::AllReduce);
  EXPECT_LT(r.sources[2].overall.max_abs, 1e-9);
  bool kernel_note = false;
  for (const auto& n : r.notes) kernel_note = kernel_note || n.find("gamma ~ 0.5 ps/B") != std::string::npos;
  EXPECT_TRUE(kernel_note) << format_calibration_report(r);
  // A file of kernel rows only has nothing a schedule explains.
  std::ofstream(path) << "algorithm,n,size_bytes,time_s\nreduce_kernel,1,1048576,1e-5\n";
  expect_contains(error_of([&] { run_calibration(files, {}); }), "no measurement to fit");
  std::ofstream(path) << "algorithm,n,size_bytes,time_s\nring,1,1048576,1e-5\n";
  expect_contains(error_of([&] { run_calibration(files, {}); }), "measurements_micro.csv:2: ring on n = 1 GPU");
}

TEST(RunCalibration, GammaIsIdentifiedWhenCollectivesDiffer) {
  // reduce_scatter and all_gather logs synthesised from known parameters: the difference is gamma.
  TempDir dir("collsim_calibrate_test");
  const LinkModel truth = link(2e-6, 350e9, 1.0 / 150e9);
  const auto write_log = [&](const std::string& name, const char* perf, bool reduce) {
    std::string text = fmt::format("# Collective test starting: {}\n# nranks: 4\n", perf);
    for (double s = 64; s <= 8.0 * 1024 * 1024 * 1024; s *= 2) {
      const double t = 3 * truth.latency_s + 0.75 * s / truth.bandwidth_Bps + (reduce ? 0.75 * s * truth.gamma_s_per_byte : 0.0);
      const double algbw = s / t / 1e9;
      text += fmt::format("{} {} float {} -1 {:.6f} {:.4f} {:.4f} 0 {:.6f} {:.4f} {:.4f} 0\n", s, s / 16,
                          reduce ? "sum" : "none", t * 1e6, algbw, algbw * 0.75, t * 1e6, algbw, algbw * 0.75);
    }
    std::ofstream(dir.path() / name) << text;
    return dir.path() / name;
  };
  const std::vector<std::filesystem::path> files{write_log("rs.txt", "reduce_scatter_perf", true),
                                                 write_log("ag.txt", "all_gather_perf", false)};
  const CalibrationReport report = run_calibration(files, alpha_beta_only());
  EXPECT_TRUE(report.single.regimes[0].gamma_fitted);
  EXPECT_NEAR(report.model.link.latency_s / truth.latency_s, 1.0, 1e-4);
  EXPECT_NEAR(report.model.link.bandwidth_Bps / truth.bandwidth_Bps, 1.0, 1e-4);
  EXPECT_NEAR(report.model.link.gamma_s_per_byte / truth.gamma_s_per_byte, 1.0, 1e-3);
  EXPECT_TRUE(report.model_path.empty());
  EXPECT_TRUE(report.csv_path.empty());
}

TEST(RunCalibration, SharedLogsCrossPrediction) {
  CalibrationOptions options = alpha_beta_only();
  options.fit_on = {Collective::ReduceScatter};
  const std::vector<std::filesystem::path> files{kReduceScatter4, kAllGather4, kAllReduce8};
  const CalibrationReport r = run_calibration(files, options);
  ASSERT_EQ(r.sources.size(), 3u);
  EXPECT_TRUE(r.sources[0].fitted);
  EXPECT_EQ(r.sources[0].collective, Collective::ReduceScatter);
  EXPECT_FALSE(r.sources[1].fitted);
  EXPECT_FALSE(r.sources[2].fitted);
  EXPECT_EQ(r.fit_stats.count, 28u);
  // Regression guards on the published logs (numbers in the report of issue 5).
  EXPECT_LT(r.fit_stats.median_abs, 0.06);
  EXPECT_LT(r.sources[1].overall.median_abs, 0.15);  // all_gather, same n, same round count
  // NVLS is not a ring: through the ring schedule, 8-GPU all_reduce at large sizes is predicted
  // about 45% too slow, systematically (in-switch reduction moves less data per GPU).
  ASSERT_EQ(r.sources[2].ranges.size(), 3u);
  EXPECT_GT(r.sources[2].ranges[2].stats.mean, 0.3);
  const std::string text = format_calibration_report(r);
  expect_contains(text, "cross-predicted");
  expect_contains(text, ">= 16 MiB");
}

// The default fit (launch once per collective, per-hop alpha from NCCL's prior at one n, three
// protocol regimes) on the 4-GPU reduce_scatter log, predicting all_gather on the same box.
// Measured: RS fitted to 2.1% median; AG predicted to 18.9% median (27.6% below 64 KiB): both
// collectives have n-1 = 3 ring hops, yet AG's floor is 16.8 us against RS's 21.5 us, a
// reduction-specific latency that RS alone cannot separate from the launch (README, Calibration).
TEST(RunCalibration, DefaultFitChargesOneLaunchPerCollective) {
  CalibrationOptions options;
  options.fit_on = {Collective::ReduceScatter};
  const std::vector<std::filesystem::path> files{kReduceScatter4, kAllGather4};
  const CalibrationReport r = run_calibration(files, options);
  ASSERT_TRUE(r.regime_fit.has_value());
  ASSERT_EQ(r.regime_fit->regimes.size(), 3u);
  const FittedRegime& ll = r.regime_fit->regimes[0];
  EXPECT_TRUE(ll.launch_fitted);
  EXPECT_FALSE(ll.latency_fitted);  // one collective at one n: alpha from the prior
  EXPECT_DOUBLE_EQ(ll.link.latency_s, per_hop_prior(Protocol::LL).value);
  // The 4-GPU box ran nccl-tests -g 4: its ~19.6 us launch is the launch of one GPU plus three
  // more from the same thread, at the prior per extra GPU (one way of driving: not separable).
  EXPECT_FALSE(ll.launch_per_extra_gpu_fitted);
  EXPECT_DOUBLE_EQ(ll.launch_per_extra_gpu_s, launch_per_extra_gpu_prior().value);
  EXPECT_GT(ll.launch_s + 3 * ll.launch_per_extra_gpu_s, 15e-6);
  EXPECT_LT(ll.launch_s + 3 * ll.launch_per_extra_gpu_s, 21e-6);
  for (const auto& p : r.points) {
    EXPECT_DOUBLE_EQ(p.coefficients.launches, 1.0);
    EXPECT_DOUBLE_EQ(p.coefficients.extra_gpu_launches, 3.0);
  }
  EXPECT_LT(r.fit_stats.median_abs, 0.03);
  EXPECT_LT(r.sources[1].overall.median_abs, 0.20);
  EXPECT_LT(r.sources[1].ranges[2].stats.median_abs, 0.05);  // >= 16 MiB: the bandwidth carries over
  expect_contains(format_calibration_report(r), "regime 0 (LL)");
}

// Leave-one-out over every shared log, within each machine (a fit on one box says nothing about
// another's launch floor): fit on the others, predict the held-out one, and bound the median
// error by the measured value (README, "Calibration", leave-one-out table). The H100 group's
// all_reduce is NVLS at large sizes, which the ring schedule cannot explain, and the two A100
// all_reduce runs differ in their floor (39 us one process, 20 us eight processes).
struct LeaveOneOutCase {
  const char* held_out;
  std::vector<const char*> machine;
  double median_bound;
  // How the logs are explained: ring on an NVSwitch, or what NCCL would run on the machine's
  // topology (nvls on dgx_h100 where it is faster under the fitted model).
  const char* algorithm = "ring";
  const char* topology = "nvswitch";
};

class LeaveOneOut : public ::testing::TestWithParam<LeaveOneOutCase> {};

TEST_P(LeaveOneOut, PredictsTheHeldOutLogWithinItsDocumentedBound) {
  const LeaveOneOutCase& c = GetParam();
  std::vector<std::filesystem::path> files;
  for (const char* f : c.machine) files.push_back(log_path(f));
  CalibrationOptions options;
  options.hold_out = {c.held_out};
  options.algorithm = c.algorithm;
  options.topology = c.topology;
  const CalibrationReport r = run_calibration(files, options);
  const auto held = std::find_if(r.sources.begin(), r.sources.end(), [&](const SourceErrors& s) { return s.source == c.held_out; });
  ASSERT_NE(held, r.sources.end());
  EXPECT_FALSE(held->fitted);
  EXPECT_LT(held->overall.median_abs, c.median_bound) << c.held_out;
  for (const auto& p : r.points) EXPECT_EQ(p.fitted, p.source != c.held_out);
}

const std::vector<const char*> kH100Logs{"h100-nvswitch-4gpu-reducescatter.txt", "h100-nvswitch-4gpu-allgather.txt",
                                         "h100-8gpu-allreduce-nvidia-exemplar.txt"};
const std::vector<const char*> kA100Logs{"a100-sxm4-8gpu-allreduce-g8.txt", "a100-sxm4-8gpu-allreduce-mpirun.txt",
                                         "a100-8gpu-sendrecv-partial.txt"};

INSTANTIATE_TEST_SUITE_P(SharedLogs, LeaveOneOut,
                         // Measured: 18.3%, 26.9%, 27.9% (H100); 2.5%, 8.2%, 11.0% (A100). The A100
                         // all_reduce pair is predicted with the launch per extra GPU at its prior,
                         // which was measured on those two logs: not an independent check of it.
                         ::testing::Values(LeaveOneOutCase{kH100Logs[0], kH100Logs, 0.20},
                                           LeaveOneOutCase{kH100Logs[1], kH100Logs, 0.29},
                                           LeaveOneOutCase{kH100Logs[2], kH100Logs, 0.30},
                                           LeaveOneOutCase{kA100Logs[0], kA100Logs, 0.05},
                                           LeaveOneOutCase{kA100Logs[1], kA100Logs, 0.10},
                                           LeaveOneOutCase{kA100Logs[2], kA100Logs, 0.12}));

// The same through NCCL's choice (--algo nccl): the exemplar's large sizes are then explained by
// nvls, not ring, so a fit that includes it no longer distorts the Simple regime. Measured: H100
// 16.4%, 11.8%, 13.8% (the exemplar predicted over all sizes; from 64 KiB up see
// LeaveOneOutThroughNccl); A100 2.5%, 8.2%, 11.0% (ring is NCCL's choice there at every size).
INSTANTIATE_TEST_SUITE_P(SharedLogsThroughNccl, LeaveOneOut,
                         ::testing::Values(LeaveOneOutCase{kH100Logs[0], kH100Logs, 0.17, "nccl", "dgx_h100"},
                                           LeaveOneOutCase{kH100Logs[1], kH100Logs, 0.12, "nccl", "dgx_h100"},
                                           LeaveOneOutCase{kH100Logs[2], kH100Logs, 0.14, "nccl", "dgx_h100"},
                                           LeaveOneOutCase{kA100Logs[0], kA100Logs, 0.03, "nccl", "dgx_a100"},
                                           LeaveOneOutCase{kA100Logs[1], kA100Logs, 0.09, "nccl", "dgx_a100"},
                                           LeaveOneOutCase{kA100Logs[2], kA100Logs, 0.12, "nccl", "dgx_a100"}));

// On a cluster topology NCCL's candidates are the hierarchical rows, built with the node size:
// the 8-GPU exemplar is one node (nvls_tree, then nvls), and a ReduceScatter on two nodes takes a
// candidate with a reduce_scatter phase (ring_multichannel there).
TEST(RunCalibration, NcclChoiceOnAClusterTopology) {
  CalibrationOptions options;
  options.algorithm = "nccl";
  options.topology = "cluster_h100_1024";
  const CalibrationReport one_node = run_calibration(std::vector<std::filesystem::path>{kAllReduce8}, options);
  std::set<std::string> chosen;
  for (const CalibrationPoint& p : one_node.points) chosen.insert(p.algorithm);
  EXPECT_TRUE(chosen.count("nvls_tree") == 1 || chosen.count("nvls") == 1) << fmt::format("{}", fmt::join(chosen, ", "));
  options.nranks = 16;
  const CalibrationReport two_nodes = run_calibration(std::vector<std::filesystem::path>{kReduceScatter4}, options);
  for (const CalibrationPoint& p : two_nodes.points) {
    const Schedule s = generate_schedule(p.algorithm, [&] {
      AlgorithmOptions o;
      o.n = 16;
      o.gpus_per_node = 8;
      return o;
    }());
    EXPECT_TRUE(std::any_of(s.phases.begin(), s.phases.end(), [](const Phase& ph) { return ph.name() == "reduce_scatter"; }))
        << p.algorithm;
  }
  expect_contains(format_calibration_report(two_nodes), "(reduce_scatter n=16)");
}

// A log that names its protocol and not its algorithm: NCCL chose the algorithm for that
// protocol only, so an LL exemplar never takes nvls (which NCCL runs with Simple alone), while the
// same log without the header takes nvls at its large sizes.
TEST(RunCalibration, NcclChoiceKeepsTheProtocolALogNames) {
  TempDir dir("collsim_calibrate_test");
  const auto ll = log_with_header(dir, kAllReduce8, "ar_ll.txt", "# NCCL_PROTO=LL\n");
  CalibrationOptions options;
  options.algorithm = "nccl";
  options.topology = "dgx_h100";
  const std::vector<std::filesystem::path> files{kReduceScatter4, kAllGather4, ll};
  const CalibrationReport named = run_calibration(files, options);
  const std::vector<std::filesystem::path> plain_files{kReduceScatter4, kAllGather4, kAllReduce8};
  const CalibrationReport plain = run_calibration(plain_files, options);
  for (const auto& p : named.points) EXPECT_NE(p.algorithm, "nvls") << p.source << " " << p.size_bytes;
  EXPECT_TRUE(std::any_of(plain.points.begin(), plain.points.end(), [](const auto& p) { return p.algorithm == "nvls"; }));
}

// --algo nccl explains each row by what NCCL would run under the model the fit ends with (a
// fixed point): re-choosing under the written model gives every row its algorithm back. RS and
// AG rows take ring (the only NCCL candidate with a phase of that name); the exemplar's largest
// sizes take nvls.
TEST(RunCalibration, NcclChoiceIsAFixedPointOfTheFit) {
  std::vector<std::filesystem::path> files;
  for (const char* f : kH100Logs) files.push_back(log_path(f));
  CalibrationOptions options;
  options.algorithm = "nccl";
  options.topology = "dgx_h100";
  const CalibrationReport r = run_calibration(files, options);
  std::set<std::string> all_reduce_choices;
  for (const CalibrationPoint& p : r.points) {
    ASSERT_TRUE(p.chosen_by_nccl) << p.source << " " << p.size_bytes;
    const Topology topology = resolve_topology("dgx_h100", p.n, r.model.link);
    const NcclChoice again =
        choose_nccl(p.n, p.size_bytes, topology, &r.model, r.model.execution_for_size(p.size_bytes), p.collective);
    EXPECT_EQ(again.algorithm, p.algorithm) << p.source << " " << p.size_bytes;
    if (p.collective != Collective::AllReduce) {
      EXPECT_EQ(p.algorithm, "ring") << p.source;
      continue;
    }
    all_reduce_choices.insert(p.algorithm);
    if (p.size_bytes >= 1e9) {
      EXPECT_EQ(p.algorithm, "nvls") << p.size_bytes;
    }
  }
  EXPECT_EQ(all_reduce_choices, (std::set<std::string>{"nvls", "ring"}));
  expect_contains(format_calibration_report(r), "explained by NCCL's choice under the fitted model");
  EXPECT_LT(r.fit_stats.median_abs, 0.08);  // measured 7.0% over the three logs
}

// --no-launch charges no launch at all, so none per extra GPU either, even for a -g 4 log.
TEST(RunCalibration, NoLaunchMeansNoLaunchPerExtraGpu) {
  CalibrationOptions options;
  options.fit_launch = false;
  const std::vector<std::filesystem::path> files{kReduceScatter4};
  const CalibrationReport r = run_calibration(files, options);
  const auto& regimes = r.regime_fit ? r.regime_fit->regimes : r.single.regimes;
  for (const FittedRegime& regime : regimes) {
    EXPECT_EQ(regime.launch_s, 0.0);
    EXPECT_EQ(regime.launch_per_extra_gpu_s, 0.0);
  }
}

// A thread driving G GPUs launches G kernels in turn. The A100 server's all_reduce logged both ways
// (-g 8 in one process, mpirun -np 8 with -g 1) separates the launch of one GPU from the launch
// per further GPU (fitted, the prior's source); logs that differ in -g but also in collective and
// n (the 4-GPU RS at -g 4 and the 8-GPU exemplar at -g 1) do not, and the prior is used.
TEST(RunCalibration, LaunchPerExtraGpuIsFittedOnlyFromOneMeasurementDrivenTwoWays) {
  {
    const std::vector<std::filesystem::path> files{log_path("a100-sxm4-8gpu-allreduce-g8.txt"),
                                                   log_path("a100-sxm4-8gpu-allreduce-mpirun.txt")};
    const CalibrationReport r = run_calibration(files, CalibrationOptions{});
    ASSERT_TRUE(r.regime_fit.has_value());
    const FittedRegime& first = r.regime_fit->regimes.front();
    EXPECT_TRUE(first.launch_per_extra_gpu_fitted);
    EXPECT_NEAR(first.launch_per_extra_gpu_s, launch_per_extra_gpu_prior().value, 0.1e-6);
    EXPECT_GT(first.launch_s, 10e-6);
    for (const auto& p : r.points) {
      EXPECT_EQ(p.gpus_per_thread, p.source == "a100-sxm4-8gpu-allreduce-g8.txt" ? 8u : 1u) << p.source;
    }
    EXPECT_LT(r.fit_stats.median_abs, 0.05);
  }
  {
    const std::vector<std::filesystem::path> files{kReduceScatter4, kAllReduce8};
    const CalibrationReport r = run_calibration(files, CalibrationOptions{});
    const FittedRegime& first = r.regime_fit ? r.regime_fit->regimes.front() : r.single.regimes.front();
    EXPECT_FALSE(first.launch_per_extra_gpu_fitted);
    EXPECT_DOUBLE_EQ(first.launch_per_extra_gpu_s, launch_per_extra_gpu_prior().value);
    const auto terms = r.model.terms;
    const auto term = std::find_if(terms.begin(), terms.end(), [](const auto& t) { return t.name == "launch_per_extra_gpu_s"; });
    ASSERT_NE(term, terms.end());
    EXPECT_EQ(term->origin, "prior");
    expect_contains(format_calibration_report(r), "per extra GPU");
  }
}

// The check through what NCCL ran: fit on the 4-GPU RS + AG logs (default options),
// then predict every exemplar all_reduce row from 64 KiB up as `simulate --algo nccl --topology
// dgx_h100 --model M` does (NCCL's choice of candidate and protocol, replayed; the exemplar ran one
// GPU per process, the model's launch of one GPU). Measured: median 5.7% (nvls from 2 MiB, within
// 6% from 64 MiB up, 12-14% fast at 8-32 MiB; ring at 64 KiB-1 MiB 36-99% slow: 14 hops at
// NCCL's per-hop priors; 1-32 KiB 11-16%). Bound: the target, 10%.
TEST(LeaveOneOutThroughNccl, ExemplarAllReduceFromTheFourGpuRsAndAgLogs) {
  CalibrationOptions options;
  const std::vector<std::filesystem::path> files{kReduceScatter4, kAllGather4};
  const CalibrationReport r = run_calibration(files, options);
  const NcclLog log = read_nccl_log(kAllReduce8);
  std::vector<double> errors;
  const auto engine = make_replay_engine();
  for (const NcclLogRow& row : log.rows) {
    if (row.size_bytes < 65536) continue;
    const double size = row.size_bytes;
    Topology h100 = resolve_topology("dgx_h100", 8, r.model.link);
    apply_model(r.model, size, h100);
    const NcclChoice choice = choose_nccl(8, size, h100, &r.model, r.model.execution_for_size(size));
    AlgorithmOptions o;
    o.n = 8;
    set_sizing(o, choice.topology, size);
    RunConfig config;
    config.size_bytes = size;
    config.topology = choice.topology;
    config.execution = choice.execution;
    const double predicted = engine->run(generate_schedule(choice.algorithm, o), config).time_s;
    EXPECT_DOUBLE_EQ(predicted, choice.predicted_s) << size;
    if (size >= 64.0 * (1 << 20)) {
      EXPECT_EQ(choice.algorithm, "nvls") << size;
    }
    const double measured = std::min(row.time_oop_s, row.time_ip_s);
    errors.push_back(std::fabs(predicted - measured) / measured);
  }
  ASSERT_EQ(errors.size(), 19u);
  std::nth_element(errors.begin(), errors.begin() + 9, errors.end());
  EXPECT_LT(errors[9], 0.10);
}

// A log that names what NCCL ran is explained through it: NCCL_ALGO picks the schedule
// (AlgorithmInfo::nccl_name), NCCL_PROTO puts every row in that protocol's regime; unknown names
// are errors naming the file, the line and the value, and sets name no single one.
TEST(RunCalibration, LogHeaderNamesTheAlgorithmAndProtocol) {
  TempDir dir("collsim_calibrate_test");
  const auto with_header = [&](const std::string& name, const std::string& header) {
    return log_with_header(dir, kAllGather4, name, header);
  };
  {
    // --algo explains the logs that do not say; the header overrides it for its own log.
    CalibrationOptions options;
    options.algorithm = "recursive_halving_doubling";
    const std::vector<std::filesystem::path> files{kReduceScatter4, with_header("ag.txt", "# NCCL_ALGO=ring\n")};
    const CalibrationReport r = run_calibration(files, options);
    for (const auto& p : r.points) {
      EXPECT_EQ(p.algorithm, p.source == "ag.txt" ? "ring" : "recursive_halving_doubling") << p.source;
    }
  }
  {
    const std::vector<std::filesystem::path> files{kReduceScatter4,
                                                   with_header("ag_simple.txt", "# NCCL_ALGO=Ring NCCL_PROTO=Simple\n")};
    const CalibrationReport r = run_calibration(files, CalibrationOptions{});
    ASSERT_TRUE(r.regime_fit.has_value());
    ASSERT_EQ(r.regime_fit->regimes.size(), 3u);
    for (const auto& p : r.points) {
      if (p.source != "ag_simple.txt") continue;
      ASSERT_TRUE(p.protocol.has_value());
      EXPECT_EQ(r.regime_fit->regimes[p.regime].protocol, Protocol::Simple) << p.size_bytes;
    }
  }
  const auto header_error = [&](const std::string& header) {
    const std::vector<std::filesystem::path> files{with_header("bad.txt", header)};
    return error_of([&] { run_calibration(files, CalibrationOptions{}); });
  };
  expect_contains(header_error("# NCCL_ALGO=CollNetDirect\n"), "bad.txt:1: NCCL_ALGO = 'CollNetDirect' is not an algorithm");
  expect_contains(header_error("# NCCL_PROTO=NVLS\n"), "bad.txt:1: NCCL_PROTO = 'NVLS' is not one protocol");
  // A set (a list, an exclusion such as NCCL's own "NCCL_PROTO set by environment to ^LL128") names
  // no single one: the fit chooses, and says so. They were refused, with no way around it.
  for (const char* header : {"# NCCL_PROTO=LL,Simple\n", "# NCCL_PROTO=^LL128 NCCL_ALGO=^NVLS\n"}) {
    const std::vector<std::filesystem::path> files{with_header("set.txt", header)};
    const CalibrationReport r = run_calibration(files, CalibrationOptions{});
    for (const auto& p : r.points) EXPECT_FALSE(p.protocol.has_value()) << header;
    expect_contains(r.inputs.front().how, "names no single one");
  }
  // Per-collective entries (NCCL 2.24): the one for this log's collective (AllGather) is what it ran.
  const std::vector<std::filesystem::path> per_collective{with_header("pc.txt", "# NCCL_PROTO=allreduce:Simple;allgather:LL\n")};
  const CalibrationReport pc = run_calibration(per_collective, CalibrationOptions{});
  ASSERT_FALSE(pc.points.empty());
  EXPECT_EQ(pc.points.front().protocol, Protocol::LL);
  // The first entry without a function applies to every function not listed later; an
  // exclusion that leaves one protocol names it; a quoted value (a shell command line) is read.
  for (const auto& [header, protocol] : {std::pair{"# NCCL_PROTO=Simple;allreduce:LL\n", Protocol::Simple},
                                         std::pair{"# NCCL_PROTO=^LL,LL128\n", Protocol::Simple},
                                         std::pair{"# NCCL_PROTO=\"allreduce:Simple;allgather:LL128\"\n", Protocol::LL128}}) {
    const std::vector<std::filesystem::path> one{with_header("one.txt", header)};
    const CalibrationReport r = run_calibration(one, CalibrationOptions{});
    ASSERT_FALSE(r.points.empty());
    EXPECT_EQ(r.points.front().protocol, protocol) << header;
  }
}

// A log that names its protocol, fitted alone: every row belongs to that protocol's regime, so
// --regimes auto fits as many regimes as the named protocols fill (one here; three used to leave
// LL and LL128 without rows and fail with "no fit with 3 regime(s) gives a positive beta", naming
// no file). Asking for regimes no row can fill is an error naming the regime and a row's file and line.
TEST(RunCalibration, AutoRegimesFollowTheProtocolsTheLogsName) {
  TempDir dir("collsim_calibrate_test");
  const auto simple = log_with_header(dir, kAllReduce8, "ar_simple.txt", "# NCCL_PROTO=Simple\n");
  for (const char* algorithm : {"ring", "nccl"}) {
    CalibrationOptions options;
    options.algorithm = algorithm;
    const std::vector<std::filesystem::path> files{simple};
    const CalibrationReport r = run_calibration(files, options);
    EXPECT_EQ(r.regimes, 1u) << algorithm;
    EXPECT_FALSE(r.regime_fit.has_value()) << algorithm;
    options.regimes = 3;
    const std::string error = error_of([&] { run_calibration(files, options); });
    expect_contains(error, "--regimes 3: no row can fit regime 0 (LL): every input names its protocol (the first row, "
                           "ar_simple.txt:");
    expect_contains(error, ", ran Simple)");
  }
}

TEST(RunCalibration, HoldOutNamesAnInput) {
  CalibrationOptions options;
  options.hold_out = {"nope.txt"};
  const std::vector<std::filesystem::path> files{kReduceScatter4};
  expect_contains(error_of([&] { run_calibration(files, options); }), "--hold-out nope.txt: no input file");
  options.hold_out = {kReduceScatter4.filename().string()};
  expect_contains(error_of([&] { run_calibration(files, options); }),
                  "every input is held out, so nothing is left to fit");
}

TEST(RunCalibration, FitOnAllReducePredictReduceScatter) {
  CalibrationOptions options;
  options.fit_on = {Collective::AllReduce};
  options.predict = {Collective::ReduceScatter};
  options.regimes = 3;
  const std::vector<std::filesystem::path> files{kAllReduce8, kReduceScatter4, kAllGather4};
  const CalibrationReport r = run_calibration(files, options);
  ASSERT_TRUE(r.regime_fit.has_value());
  EXPECT_EQ(r.regime_fit->regimes.size(), 3u);
  EXPECT_EQ(r.model.regimes.size(), 3u);
  ASSERT_EQ(r.sources.size(), 2u);  // all_gather is neither fitted nor predicted
  EXPECT_EQ(r.sources[1].collective, Collective::ReduceScatter);
  EXPECT_EQ(r.fit_stats.count, 32u);
  expect_contains(format_calibration_report(r), "3-regime fit");
}

// A shipped model (configs/models/NAME.yaml) against a fresh fit with the options of the
// README's command for it. Compared to 1e-9 rather than byte for byte so that other build types
// (sanitizers, -O0) agree.
void expect_shipped_model_is_fresh_fit(const std::string& name, const std::vector<std::filesystem::path>& files,
                                       CalibrationOptions options) {
  const ModelFile shipped =
      read_model_file(std::filesystem::path(COLLSIM_SOURCE_DIR) / "configs" / "models" / (name + ".yaml"));
  options.name = name;
  const ModelFile fresh = run_calibration(files, options).model;
  const auto same = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); };
  const auto same_link = [&](const LinkModel& a, const LinkModel& b) {
    return same(a.latency_s, b.latency_s) && same(a.bandwidth_Bps, b.bandwidth_Bps) &&
           std::fabs(a.gamma_s_per_byte - b.gamma_s_per_byte) <= 1e-9 * std::max(a.gamma_s_per_byte, 1e-12);
  };
  EXPECT_EQ(fresh.name, shipped.name);
  EXPECT_TRUE(same_link(fresh.link, shipped.link));
  ASSERT_EQ(fresh.regimes.size(), shipped.regimes.size());
  for (std::size_t k = 0; k < fresh.regimes.size(); ++k) {
    EXPECT_EQ(fresh.regimes[k].protocol, shipped.regimes[k].protocol) << k;
    EXPECT_TRUE(same_link(fresh.regimes[k].link, shipped.regimes[k].link)) << k;
    EXPECT_EQ(fresh.regimes[k].min_size_bytes, shipped.regimes[k].min_size_bytes) << k;
    EXPECT_EQ(fresh.regimes[k].max_size_bytes, shipped.regimes[k].max_size_bytes) << k;
    EXPECT_TRUE(same(fresh.regimes[k].launch_s, shipped.regimes[k].launch_s)) << k;
    EXPECT_TRUE(same(fresh.regimes[k].launch_per_extra_gpu_s, shipped.regimes[k].launch_per_extra_gpu_s)) << k;
    EXPECT_EQ(fresh.regimes[k].launch_per_extra_gpu_fitted, shipped.regimes[k].launch_per_extra_gpu_fitted) << k;
  }
  ASSERT_EQ(fresh.provenance.sources.size(), shipped.provenance.sources.size());
  for (std::size_t i = 0; i < fresh.provenance.sources.size(); ++i) {
    EXPECT_EQ(fresh.provenance.sources[i].file, shipped.provenance.sources[i].file);
    EXPECT_EQ(fresh.provenance.sources[i].fnv1a64, shipped.provenance.sources[i].fnv1a64);
  }
  EXPECT_EQ(fresh.provenance.fit_on, shipped.provenance.fit_on);
  ASSERT_EQ(fresh.fit_rows.size(), shipped.fit_rows.size());
  for (std::size_t i = 0; i < fresh.fit_rows.size(); ++i) {
    EXPECT_EQ(fresh.fit_rows[i].measured_s, shipped.fit_rows[i].measured_s) << i;
    EXPECT_TRUE(same(fresh.fit_rows[i].predicted_s, shipped.fit_rows[i].predicted_s)) << i;
    EXPECT_EQ(fresh.fit_rows[i].role, shipped.fit_rows[i].role) << i;
  }
}

// The shipped models are produced by this code from the shared logs, with the README's commands
// (section "Calibration"): a change to the fit that moves one must regenerate the file, and a
// change to a command must change these options too. The regime count is not taken from the
// file: the A100 command asked for 3 regimes explicitly after the automatic choice came to keep
// 2 on those logs, and only a test with the command's own options saw that.
TEST(RunCalibration, ShippedModelMatchesAFreshFit) {
  CalibrationOptions options;
  options.fit_on = {Collective::ReduceScatter, Collective::AllGather};
  options.fit_gamma = false;
  expect_shipped_model_is_fresh_fit("h100_nvswitch", {kReduceScatter4, kAllGather4, kAllReduce8}, options);
}

TEST(RunCalibration, ShippedA100ModelMatchesAFreshFit) {
  CalibrationOptions options;
  options.regimes = 3;
  options.fit_gamma = false;
  expect_shipped_model_is_fresh_fit(
      "a100_nvswitch",
      {log_path("a100-sxm4-8gpu-allreduce-mpirun.txt"), log_path("a100-8gpu-sendrecv-partial.txt"),
       log_path("a100-sxm4-8gpu-allreduce-g8.txt")},
      options);
}

TEST(RunCalibration, BadRequests) {
  const std::vector<std::filesystem::path> logs{kReduceScatter4};
  expect_contains(error_of([] { run_calibration({}, {}); }), "no input file");
  CalibrationOptions o;
  o.regimes = 4;
  expect_contains(error_of([&] { run_calibration(logs, o); }), "--regimes: 4 is outside 1..3");
  o = {};
  o.algorithm = "spiral";
  expect_contains(error_of([&] { run_calibration(logs, o); }), "unknown algorithm 'spiral'");
  o = {};
  o.fit_on = {Collective::AllGather};
  expect_contains(error_of([&] { run_calibration(logs, o); }), "--fit-on all_gather: no input measured this collective");
  o = {};
  o.fit_on = {Collective::ReduceScatter};
  o.predict = {Collective::AllReduce};
  expect_contains(error_of([&] { run_calibration(logs, o); }), "--predict all_reduce: no input measured this collective");
  o.predict = {Collective::ReduceScatter};
  expect_contains(error_of([&] { run_calibration(logs, o); }), "also in --fit-on");
  expect_contains(error_of([] {
                    const std::vector<std::filesystem::path> f{log_path("bad-truncated-row.txt")};
                    run_calibration(f, {});
                  }),
                  "bad-truncated-row.txt:30:");
  expect_contains(error_of([] {
                    const std::vector<std::filesystem::path> f{log_path("nope.txt")};
                    run_calibration(f, {});
                  }),
                  "cannot read");
  TempDir dir("collsim_calibrate_test");
  const auto csv = dir.path() / "m.csv";
  std::ofstream(csv) << "algorithm,n,size_bytes,time_s\nfancy,4,1024,1e-5\nring,4,2048,2e-5\n";
  const std::vector<std::filesystem::path> f{csv};
  expect_contains(error_of([&] { run_calibration(f, {}); }), "m.csv:2: algorithm 'fancy' is neither a collsim schedule");
  std::ofstream(csv) << "algorithm,n,size_bytes,delay_s,time_s\nring,4,1024,0.1,1e-5\n";
  expect_contains(error_of([&] { run_calibration(f, {}); }), "every row has delay_s > 0");
  const std::vector<std::filesystem::path> sendrecv{log_path("variant-sendrecv-synthetic.txt")};
  const CalibrationReport r = run_calibration(sendrecv, alpha_beta_only());
  EXPECT_NEAR(r.model.link.latency_s / 9.5e-6, 1.0, 0.01);
  EXPECT_NEAR(r.model.link.bandwidth_Bps / 150e9, 1.0, 0.01);
}

TEST(LogTime, Names) {
  EXPECT_EQ(parse_log_time("in_place"), LogTime::InPlace);
  EXPECT_STREQ(log_time_name(LogTime::OutOfPlace), "out_of_place");
  EXPECT_THROW(parse_log_time("fastest"), ConfigError);
}

// Regimes chosen by size alone keep the protocol model only where it explains the fitted rows
// about as well as one regime. The A100 log cut at 1 MiB (a latency-bound sweep) had no 3-regime
// fit with a positive beta and was refused; with --regimes 3 it still is, as asked.
TEST(RunCalibration, AutoRegimesFallBackWhenMoreDoNotFit) {
  const TempDir dir;
  std::ifstream in(COLLSIM_TEST_DATA_DIR "/nccl-tests/a100-sxm4-8gpu-allreduce-g8.txt");
  const std::filesystem::path cut = dir.path() / "a100_to_1MiB.txt";
  std::ofstream out(cut);
  for (std::string line; std::getline(in, line);) {
    // Data rows start with their size in bytes; keep those up to 1 MiB and every other line.
    const std::size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && std::isdigit(static_cast<unsigned char>(line[first])) &&
        std::stod(line.substr(first)) > 1048576) {
      continue;
    }
    out << line << "\n";
  }
  out.close();
  const std::vector<std::filesystem::path> files{cut};
  const CalibrationReport r = run_calibration(files, {});
  EXPECT_LT(r.regimes, 3u);
  EXPECT_EQ(r.regime_fit.has_value(), r.regimes > 1);
  const bool noted = std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.find("a 3-regime fit was left out") != std::string::npos;
  });
  EXPECT_TRUE(noted) << fmt::format("{}", fmt::join(r.notes, " | "));
  CalibrationOptions three;
  three.regimes = 3;
  expect_contains(error_of([&] { run_calibration(files, three); }), "no fit with 3 regime(s) gives a positive beta");
  // A full sweep keeps its three regimes.
  const std::vector<std::filesystem::path> full{COLLSIM_TEST_DATA_DIR "/nccl-tests/a100-sxm4-8gpu-allreduce-g8.txt"};
  EXPECT_EQ(run_calibration(full, {}).regimes, 3u);
}

}  // namespace
}  // namespace collsim
