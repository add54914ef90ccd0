#include "collsim/models/calibration.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "collsim/models/error.hpp"

namespace collsim {
namespace {

// Ring critical-path counts (what sim/schedule_cost computes; hand-written here so that the
// models tests do not depend on sim/): n-1 rounds of one chunk of S/n.
CostCoefficients ring_reduce_scatter(double n, double size) { return {n - 1, (n - 1) * size / n, (n - 1) * size / n}; }
CostCoefficients ring_all_gather(double n, double size) { return {n - 1, (n - 1) * size / n, 0}; }

// Uniform in [-1, 1) from the raw engine, so the noise is the same on every standard library.
double symmetric_unit(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

std::vector<FitRow> synthetic(const LinkModel& link, double noise, std::uint64_t seed, bool with_all_gather = true) {
  std::mt19937_64 rng(seed);
  std::vector<FitRow> rows;
  for (const double n : {4.0, 8.0}) {
    for (double size = 64; size <= 16.0 * 1024 * 1024 * 1024; size *= 2) {
      std::vector<CostCoefficients> cs{ring_reduce_scatter(n, size)};
      if (with_all_gather) cs.push_back(ring_all_gather(n, size));
      for (const auto& c : cs) {
        const double t = linear_time_s(c, link) * (1.0 + noise * symmetric_unit(rng));
        rows.push_back({c, t, size});
      }
    }
  }
  return rows;
}

std::string error_of(const std::vector<FitRow>& rows, const FitOptions& options) {
  try {
    fit_link_model(rows, options);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError";
  return {};
}

LinkModel truth() {
  LinkModel link;
  link.latency_s = 5e-6;
  link.bandwidth_Bps = 200e9;
  link.gamma_s_per_byte = 1.0 / 100e9;
  return link;
}

TEST(Calibration, ExactDataGiveExactParameters) {
  const FitResult fit = fit_link_model(synthetic(truth(), 0.0, 1), {});
  ASSERT_EQ(fit.regimes.size(), 1u);
  const auto& link = fit.regimes[0].link;
  EXPECT_NEAR(link.latency_s / 5e-6, 1.0, 1e-9);
  EXPECT_NEAR(link.bandwidth_Bps / 200e9, 1.0, 1e-9);
  EXPECT_NEAR(link.gamma_s_per_byte * 100e9, 1.0, 1e-9);
  EXPECT_TRUE(fit.regimes[0].gamma_fitted);
  EXPECT_LT(fit.stats.max_abs, 1e-9);
  EXPECT_TRUE(fit.notes.empty());
}

TEST(Calibration, RecoversParametersFromNoisyData) {
  // 2% multiplicative noise on every row, several seeds: the estimates stay within a few percent.
  for (const std::uint64_t seed : {1u, 2u, 3u, 4u, 5u}) {
    const auto rows = synthetic(truth(), 0.02, seed);
    const FitResult fit = fit_link_model(rows, {});
    const auto& link = fit.regimes[0].link;
    EXPECT_NEAR(link.latency_s / 5e-6, 1.0, 0.02) << seed;
    EXPECT_NEAR(link.bandwidth_Bps / 200e9, 1.0, 0.03) << seed;
    EXPECT_NEAR(link.gamma_s_per_byte * 100e9, 1.0, 0.05) << seed;
    EXPECT_LT(fit.stats.max_abs, 0.03) << seed;
    EXPECT_LT(fit.stats.median_abs, 0.015) << seed;
    EXPECT_EQ(fit.predicted_s.size(), rows.size());
  }
}

TEST(Calibration, RelativeWeightsKeepSmallSizesAccurate) {
  // With weights 1/t a 64-byte row counts as much as a 16-GiB row, so the latency term is right
  // even though it is 1e-5 of the largest times.
  const auto rows = synthetic(truth(), 0.0, 1);
  const FitResult fit = fit_link_model(rows, {});
  EXPECT_LT(std::fabs(fit.rel_error.front()), 1e-9);
}

TEST(Calibration, GammaIsNotIdentifiableFromReductionsAlone) {
  const FitResult fit = fit_link_model(synthetic(truth(), 0.0, 1, /*with_all_gather=*/false), {});
  EXPECT_FALSE(fit.regimes[0].gamma_fitted);
  EXPECT_EQ(fit.regimes[0].link.gamma_s_per_byte, 0.0);
  // beta absorbs gamma: (n-1)S/n (beta + gamma) is all the data can see.
  EXPECT_NEAR(1.0 / fit.regimes[0].link.bandwidth_Bps, 1.0 / 200e9 + 1.0 / 100e9, 1e-9 / 200e9);
  ASSERT_EQ(fit.notes.size(), 1u);
  EXPECT_NE(fit.notes[0].find("not identifiable"), std::string::npos);
}

TEST(Calibration, GammaCanBeSwitchedOff) {
  const FitResult fit = fit_link_model(synthetic(truth(), 0.0, 1), {1, false});
  EXPECT_FALSE(fit.regimes[0].gamma_fitted);
  EXPECT_EQ(fit.regimes[0].link.gamma_s_per_byte, 0.0);
  EXPECT_GT(fit.stats.max_abs, 0.01);
}

TEST(Calibration, NegativeParametersAreClampedAtZero) {
  // t = S*beta - 1 us for large S: the unconstrained alpha would be negative.
  std::vector<FitRow> rows;
  for (double size = 1 << 20; size <= (1 << 30); size *= 2) {
    rows.push_back({{1, size, 0}, size / 100e9 - 1e-6, size});
  }
  const FitResult fit = fit_link_model(rows, {});
  EXPECT_EQ(fit.regimes[0].link.latency_s, 0.0);
  EXPECT_GT(fit.regimes[0].link.bandwidth_Bps, 0.0);
  EXPECT_NEAR(fit.regimes[0].link.bandwidth_Bps / 100e9, 1.0, 0.05);
  bool noted = false;
  for (const auto& note : fit.notes) noted = noted || note.find("alpha clamped at 0") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Calibration, TwoRegimesAreRecovered) {
  // NCCL-like: a low-latency, low-bandwidth protocol (LL) and a high-bandwidth one (Simple);
  // the collective takes whichever is faster. Crossover near 1 MiB for all_gather on 8 ranks.
  LinkModel ll;
  ll.latency_s = 1e-6;
  ll.bandwidth_Bps = 25e9;
  LinkModel simple;
  simple.latency_s = 6e-6;
  simple.bandwidth_Bps = 350e9;
  std::mt19937_64 rng(7);
  std::vector<FitRow> rows;
  for (double size = 8; size <= 8.0 * 1024 * 1024 * 1024; size *= 2) {
    const CostCoefficients c = ring_all_gather(8, size);
    const double t = std::min(linear_time_s(c, ll), linear_time_s(c, simple)) * (1.0 + 0.01 * symmetric_unit(rng));
    rows.push_back({c, t, size});
  }
  const FitResult one = fit_link_model(rows, {1, true});
  const FitResult two = fit_link_model(rows, {2, true});
  ASSERT_EQ(two.regimes.size(), 2u);
  EXPECT_NEAR(two.regimes[0].link.latency_s / 1e-6, 1.0, 0.05);
  EXPECT_NEAR(two.regimes[0].link.bandwidth_Bps / 25e9, 1.0, 0.05);
  EXPECT_NEAR(two.regimes[1].link.latency_s / 6e-6, 1.0, 0.05);
  EXPECT_NEAR(two.regimes[1].link.bandwidth_Bps / 350e9, 1.0, 0.05);
  EXPECT_LT(two.regimes[0].max_size_bytes, two.regimes[1].min_size_bytes);
  EXPECT_GE(two.regimes[0].max_size_bytes, 512.0 * 1024);
  EXPECT_LE(two.regimes[1].min_size_bytes, 4.0 * 1024 * 1024);
  EXPECT_LT(two.stats.max_abs, 0.02);
  EXPECT_GT(one.stats.max_abs, 0.3);
  EXPECT_EQ(two.regime_of_row.front(), 0u);
  EXPECT_EQ(two.regime_of_row.back(), 1u);
  const FitResult three = fit_link_model(rows, {3, true});
  EXPECT_EQ(three.regimes.size(), 3u);
  EXPECT_LT(three.stats.max_abs, 0.03);
}

TEST(Calibration, PredictionIsTheMinimumOverRegimes) {
  FittedRegime a, b;
  a.link.latency_s = 1e-6;
  a.link.bandwidth_Bps = 1e9;
  b.link.latency_s = 10e-6;
  b.link.bandwidth_Bps = 100e9;
  const std::vector<FittedRegime> regimes{a, b};
  EXPECT_EQ(best_regime({1, 1000, 0}, regimes), 0u);
  EXPECT_DOUBLE_EQ(predict_time_s({1, 1000, 0}, regimes), 1e-6 + 1e-6);
  EXPECT_EQ(best_regime({1, 1e8, 0}, regimes), 1u);
  EXPECT_DOUBLE_EQ(predict_time_s({1, 1e8, 0}, regimes), 10e-6 + 1e-3);
}

TEST(Calibration, ErrorStatistics) {
  const std::vector<double> odd{0.1, -0.3, 0.2};
  const ErrorStats s = error_stats(odd);
  EXPECT_EQ(s.count, 3u);
  EXPECT_DOUBLE_EQ(s.median_abs, 0.2);
  EXPECT_DOUBLE_EQ(s.max_abs, 0.3);
  EXPECT_NEAR(s.mean, 0.0, 1e-15);
  const std::vector<double> even{0.1, -0.3, 0.2, 0.4};
  EXPECT_DOUBLE_EQ(error_stats(even).median_abs, 0.25);
  EXPECT_EQ(error_stats({}).count, 0u);
}

TEST(Calibration, BadInputs) {
  const auto rows = synthetic(truth(), 0.0, 1);
  EXPECT_NE(error_of(rows, {0, true}).find("regimes: 0 is outside 1..3"), std::string::npos);
  EXPECT_NE(error_of(rows, {4, true}).find("regimes: 4 is outside 1..3"), std::string::npos);
  auto bad = rows;
  bad[3].measured_s = 0;
  EXPECT_NE(error_of(bad, {}).find("fit row 3"), std::string::npos);
  bad = rows;
  bad[2].coefficients.bytes = -1;
  EXPECT_NE(error_of(bad, {}).find("fit row 2: cost coefficients"), std::string::npos);
  const std::vector<FitRow> one_size{{{3, 768, 768}, 1e-5, 1024}, {{3, 768, 0}, 9e-6, 1024}};
  EXPECT_NE(error_of(one_size, {}).find("needs at least 2 distinct sizes; the data have 1"), std::string::npos);
  std::vector<FitRow> eleven(rows.begin(), rows.begin() + 22);
  EXPECT_NE(error_of(eleven, {3, true}).find("needs at least 12 distinct sizes; the data have 11"), std::string::npos);
  EXPECT_NO_THROW(fit_link_model(eleven, {2, true}));
  // Flat or shrinking times leave the bandwidth undetermined.
  std::vector<FitRow> flat;
  for (double size = 64; size <= 65536; size *= 2) flat.push_back({{3, size, 0}, 20e-6 - size * 1e-12, size});
  EXPECT_NE(error_of(flat, {}).find("positive beta"), std::string::npos);
}

// A fused collective pays one launch, then alpha per hop: rows with different hops per launch
// (4 and 8 ranks) separate the two, and the fit recovers both exactly.
TEST(CalibrationLaunch, SeparatesLaunchFromPerHopAlphaWhenHopsDiffer) {
  const LinkModel link{0.8e-6, 300e9, 0.0};
  const double launch_s = 12e-6;
  std::vector<FitRow> rows;
  for (const double n : {4.0, 8.0}) {
    for (double size = 64; size <= 1e9; size *= 4) {
      CostCoefficients c = ring_all_gather(n, size);
      c.launches = 1;
      rows.push_back({c, linear_time_s(c, link, launch_s), size});
    }
  }
  const FitResult fit = fit_link_model(rows, {});
  ASSERT_EQ(fit.regimes.size(), 1u);
  const FittedRegime& r = fit.regimes[0];
  EXPECT_TRUE(r.launch_fitted);
  EXPECT_TRUE(r.latency_fitted);
  EXPECT_NEAR(r.launch_s / launch_s, 1.0, 1e-9);
  EXPECT_NEAR(r.link.latency_s / link.latency_s, 1.0, 1e-9);
  EXPECT_NEAR(r.link.bandwidth_Bps / link.bandwidth_Bps, 1.0, 1e-9);
  // The old model (no launch column) charges everything per hop and cannot fit both n.
  FitOptions no_launch;
  no_launch.fit_launch = false;
  EXPECT_GT(fit_link_model(rows, no_launch).stats.max_abs, 0.1);
}

// One collective at one n has the same hops per launch in every row: launch + 3 alpha is all the
// data measure, so alpha is the protocol's NCCL prior and the launch takes the rest.
TEST(CalibrationLaunch, SameHopsPerLaunchUsesTheProtocolPrior) {
  std::vector<FitRow> rows;
  for (double size = 64; size <= 1e9; size *= 4) {
    CostCoefficients c = ring_all_gather(4, size);
    c.launches = 1;
    rows.push_back({c, 20e-6 + c.bytes / 250e9, size});
  }
  const FitResult fit = fit_link_model(rows, {});
  const FittedRegime& r = fit.regimes[0];
  EXPECT_FALSE(r.latency_fitted);
  EXPECT_EQ(r.protocol, Protocol::LL);
  EXPECT_DOUBLE_EQ(r.link.latency_s, per_hop_prior(Protocol::LL).value);
  EXPECT_NEAR(r.launch_s / (20e-6 - 3 * per_hop_prior(Protocol::LL).value), 1.0, 1e-9);
  EXPECT_LT(fit.stats.max_abs, 1e-9);
  bool noted = false;
  for (const auto& n : fit.notes) noted = noted || n.find("tuning.cc") != std::string::npos;
  EXPECT_TRUE(noted);
}

// Regimes stand for NCCL's protocols and share the first regime's launch: a bandwidth-bound
// range cannot measure a launch of microseconds.
TEST(CalibrationLaunch, RegimesAreProtocolsSharingOneLaunch) {
  EXPECT_EQ(protocol_of_regime(0, 3), Protocol::LL);
  EXPECT_EQ(protocol_of_regime(1, 3), Protocol::LL128);
  EXPECT_EQ(protocol_of_regime(2, 3), Protocol::Simple);
  EXPECT_EQ(protocol_of_regime(1, 2), Protocol::Simple);
  EXPECT_STREQ(protocol_name(Protocol::LL128), "LL128");
  std::vector<FitRow> rows;
  for (double size = 64; size <= 16e9; size *= 2) {
    CostCoefficients c = ring_all_gather(4, size);
    c.launches = 1;
    const double ll = 15e-6 + c.bytes / 40e9, simple = 15e-6 + c.bytes / 350e9;
    rows.push_back({c, std::min(ll, simple), size});
  }
  const FitResult fit = fit_link_model(rows, {3, true, true});
  ASSERT_EQ(fit.regimes.size(), 3u);
  for (const auto& r : fit.regimes) EXPECT_DOUBLE_EQ(r.launch_s, fit.regimes[0].launch_s);
  EXPECT_EQ(fit.regimes[2].protocol, Protocol::Simple);
  EXPECT_LT(fit.stats.median_abs, 0.02);
}

}  // namespace
}  // namespace collsim
