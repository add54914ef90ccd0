#include "collsim/models/formats/arrival_yaml.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>
#include <vector>

#include "collsim/models/error.hpp"
#include "test_support.hpp"

namespace collsim {
namespace {

using test::expect_config_error;

const std::filesystem::path kDelays = std::filesystem::path(COLLSIM_TEST_DATA_DIR) / "delays";

// Parses the `arrival:` key of a YAML document.
ArrivalSpec parse(const std::string& yaml, std::optional<std::uint32_t> n = std::nullopt) {
  const YAML::Node doc = YAML::Load(yaml);
  return parse_arrival_yaml(doc["arrival"], "arrival", n, kDelays);
}

DelayDistribution parse_dist(const std::string& yaml) {
  return parse_distribution_yaml(YAML::Load(yaml), "delay", kDelays);
}

TEST(ArrivalYaml, StragglersWithJitterAndPersistence) {
  const auto spec = parse(
      "arrival: {model: stragglers, stragglers: [{rank: 7, delay: 5ms}], "
      "jitter: {distribution: uniform, min: 0us, max: 20us}, persistence: 0.9}",
      8);
  EXPECT_EQ(spec.model, ArrivalModel::Stragglers);
  ASSERT_EQ(spec.stragglers.size(), 1u);
  EXPECT_EQ(spec.stragglers[0].rank, 7u);
  EXPECT_EQ(spec.stragglers[0].delay.kind(), DistributionKind::Constant);
  EXPECT_DOUBLE_EQ(spec.stragglers[0].delay.parameters().value_s, 5e-3);
  ASSERT_TRUE(spec.jitter.has_value());
  EXPECT_DOUBLE_EQ(spec.jitter->parameters().max_s, 20e-6);
  EXPECT_DOUBLE_EQ(spec.persistence, 0.9);
  EXPECT_EQ(spec.persistence_mode, PersistenceMode::Markov);
}

TEST(ArrivalYaml, DistributionModelAndShortForms) {
  const auto spec = parse(
      "arrival: {model: distribution, rank: 7, delay: {distribution: lognormal, median: 6.97ms, mean: 9.50ms}}");
  ASSERT_EQ(spec.stragglers.size(), 1u);
  EXPECT_EQ(spec.stragglers[0].delay.kind(), DistributionKind::Lognormal);
  EXPECT_NEAR(spec.stragglers[0].delay.mean(), 9.5e-3, 1e-15);

  const auto several = parse(
      "arrival:\n"
      "  model: stragglers\n"
      "  ranks: [3, 7]\n"
      "  delay: {distribution: exponential, mean: 2ms}\n"
      "  persistence: 0.8\n"
      "  persistence_mode: anchored\n");
  ASSERT_EQ(several.stragglers.size(), 2u);
  EXPECT_EQ(several.stragglers[1].rank, 7u);
  EXPECT_EQ(several.persistence_mode, PersistenceMode::Anchored);

  const auto k = parse(
      "arrival:\n"
      "  model: stragglers\n"
      "  stragglers:\n"
      "    - {rank: 1, delay: 1ms}\n"
      "    - {rank: 2, delay: {distribution: pareto, scale: 1ms, shape: 2.5}}\n");
  EXPECT_EQ(k.stragglers[1].delay.kind(), DistributionKind::Pareto);
}

TEST(ArrivalYaml, ExplicitAndNone) {
  const auto spec = parse("arrival: {model: explicit, arrival: [0, 0, 1ms, 0]}", 4);
  EXPECT_EQ(spec.arrival_s, (std::vector<double>{0, 0, 1e-3, 0}));
  const auto none = parse("arrival: {model: none, jitter: 3us}");
  EXPECT_EQ(none.model, ArrivalModel::None);
  EXPECT_DOUBLE_EQ(none.jitter->parameters().value_s, 3e-6);
}

TEST(ArrivalYaml, EveryDistributionKind) {
  EXPECT_DOUBLE_EQ(parse_dist("5ms").parameters().value_s, 5e-3);
  EXPECT_DOUBLE_EQ(parse_dist("{distribution: constant, value: 5ms}").parameters().value_s, 5e-3);
  const auto n = parse_dist("{distribution: truncated_normal, mean: 5ms, stddev: 1ms, hi: 8ms}");
  EXPECT_DOUBLE_EQ(n.parameters().lo_s, 0.0);
  EXPECT_DOUBLE_EQ(n.parameters().hi_s, 8e-3);
  EXPECT_TRUE(std::isinf(parse_dist("{distribution: normal, mean: 5ms, stddev: 1ms}").parameters().hi_s));
  EXPECT_DOUBLE_EQ(parse_dist("{distribution: exponential, mean: 2ms, shift: 1ms}").mean(), 3e-3);
  EXPECT_DOUBLE_EQ(parse_dist("{distribution: lognormal, mu: -5, sigma: 0.5}").parameters().mu, -5.0);
  EXPECT_DOUBLE_EQ(parse_dist("{distribution: lognormal, median: 1ms, sigma: 0.5}").quantile(0.5), 1e-3);
  EXPECT_DOUBLE_EQ(parse_dist("{distribution: pareto, scale: 1ms, shape: 3}").mean(), 1.5e-3);
  EXPECT_DOUBLE_EQ(parse_dist("{distribution: empirical, file: quarters_ms.csv}").mean(), 2.5e-3);
  EXPECT_DOUBLE_EQ(parse_dist("{distribution: empirical, file: steps.csv, column: delay_us}").samples_s()[0], 1130e-6);
  EXPECT_DOUBLE_EQ(parse_dist("{distribution: empirical, file: quarters_ms.csv, unit: us}").samples_s()[0], 1e-6);
  EXPECT_DOUBLE_EQ(parse_dist("{distribution: empirical, samples: [1ms, 3ms]}").mean(), 2e-3);
}

TEST(ArrivalYaml, RoundTripThroughTheResolvedForm) {
  const auto spec = parse(
      "arrival:\n"
      "  model: stragglers\n"
      "  stragglers:\n"
      "    - {rank: 1, delay: {distribution: lognormal, median: 6.97ms, mean: 9.5ms}}\n"
      "    - {rank: 4, delay: {distribution: truncated_normal, mean: 5ms, stddev: 1ms}}\n"
      "    - {rank: 6, delay: {distribution: empirical, file: quarters_ms.csv}}\n"
      "  jitter: {distribution: uniform, min: 0us, max: 20us}\n"
      "  persistence: 0.85\n");
  YAML::Emitter out;
  out << arrival_to_yaml(spec);
  const auto again = parse_arrival_yaml(YAML::Load(out.c_str()), "resolved");
  // Everything but the empirical source (the resolved form carries the samples inline).
  EXPECT_EQ(arrival_to_yaml(again).size(), arrival_to_yaml(spec).size());
  YAML::Emitter out_again;
  out_again << arrival_to_yaml(again);
  EXPECT_EQ(std::string(out_again.c_str()), std::string(out.c_str()));
  for (std::uint64_t it = 0; it < 5; ++it) {
    EXPECT_EQ(make_arrivals(again, 8, it, 3).arrival_s, make_arrivals(spec, 8, it, 3).arrival_s);
  }
  ArrivalSpec explicit_spec = parse("arrival: {model: explicit, arrival: [0, 2.5ms]}");
  YAML::Emitter out2;
  out2 << arrival_to_yaml(explicit_spec);
  EXPECT_EQ(parse_arrival_yaml(YAML::Load(out2.c_str()), "resolved").arrival_s, explicit_spec.arrival_s);
}

TEST(ArrivalYaml, BadInputNamesKeyValueAndLine) {
  // Unknown keys, with their path and line.
  expect_config_error([] { parse("arrival:\n  model: stragglers\n  rank: 1\n  delay: 1ms\n  persistance: 0.9\n"); },
                      {"arrival.persistance", "line 5", "unknown key", "persistence"});
  expect_config_error([] { parse("arrival:\n  model: distribution\n  rank: 1\n  delay:\n    distribution: lognormal\n"
                                 "    medain: 6.97ms\n    mean: 9.5ms\n"); },
                      {"delay.medain", "line 6", "unknown key"});
  expect_config_error([] { parse("arrival:\n  model: stragglers\n  stragglers:\n    - {rank: 1, dealy: 1ms}\n"); },
                      {"arrival.stragglers[0].dealy", "line 4"});
  expect_config_error([] { parse("arrival: {model: explicit, arrival: [0, 1ms], persistence: 0.5}"); },
                      {"arrival.persistence", "line 1", "unknown key"});
  // Wrong types.
  expect_config_error([] { parse("arrival:\n  model: stragglers\n  stragglers: 5\n"); },
                      {"arrival.stragglers", "line 3", "expected a list", "scalar"});
  expect_config_error([] { parse("arrival: [1, 2]"); }, {"arrival", "line 1", "expected a map"});
  expect_config_error([] { parse("arrival: {model: stragglers, rank: [1], delay: 1ms}"); },
                      {"arrival.rank", "expected a scalar"});
  expect_config_error([] { parse("arrival: {model: explicit, arrival: 1ms}"); }, {"arrival.arrival", "expected a list"});
  // Negative or malformed values.
  expect_config_error([] { parse("arrival:\n  model: stragglers\n  rank: 1\n  delay: -5ms\n"); },
                      {"arrival.delay", "line 4", "-5ms"});
  expect_config_error([] { parse("arrival:\n  model: explicit\n  arrival: [0, -1ms]\n"); },
                      {"arrival.arrival[1]", "line 3", "-1ms"});
  expect_config_error([] { parse("arrival:\n  model: stragglers\n  rank: -1\n  delay: 1ms\n"); },
                      {"arrival.rank", "line 3", "'-1'", "not a rank"});
  expect_config_error([] { parse("arrival: {model: stragglers, rank: 1, delay: 1ms, persistence: 1.5}"); },
                      {"arrival.persistence", "1.5"});
  expect_config_error([] { parse("arrival: {model: stragglers, rank: 1, delay: 1ms, persistence_mode: sticky}"); },
                      {"arrival.persistence_mode", "sticky", "markov"});
  // Ranks checked against n, with the line of the offending rank.
  expect_config_error([] { parse("arrival:\n  model: stragglers\n  stragglers:\n    - {rank: 1, delay: 1ms}\n"
                                 "    - {rank: 8, delay: 1ms}\n", 8); },
                      {"arrival.stragglers[1].rank", "line 5", "8", "n = 8"});
  expect_config_error([] { parse("arrival:\n  model: stragglers\n  ranks: [2, 2]\n  delay: 1ms\n"); },
                      {"arrival.ranks[1]", "line 3", "rank 2"});
  expect_config_error([] { parse("arrival: {model: explicit, arrival: [0, 1ms, 0]}", 4); },
                      {"arrival.arrival", "line 1", "3 arrival times", "n = 4"});
  // Model and structure.
  expect_config_error([] { parse("arrival: {model: lognormal}"); }, {"arrival.model", "lognormal", "line 1"});
  expect_config_error([] { parse("arrival: {rank: 1}"); }, {"arrival", "missing key 'model'"});
  expect_config_error([] { parse("arrival: {model: stragglers}"); }, {"arrival", "needs"});
  expect_config_error([] { parse("arrival: {model: stragglers, rank: 1, stragglers: [], delay: 1ms}"); },
                      {"arrival", "either"});
  expect_config_error([] { parse("arrival: {model: stragglers, stragglers: []}"); }, {"arrival", "at least one"});
}

TEST(ArrivalYaml, BadDistributionsNameKeyValueAndLine) {
  expect_config_error([] { parse_dist("{distribution: lognormal, median: 9.5ms, mean: 6.97ms}"); },
                      {"delay", "line 1", "median=9.5ms", "mean=6.97ms"});
  expect_config_error([] { parse_dist("{distribution: lognormal, median: 1ms}"); }, {"delay", "exactly one of"});
  expect_config_error([] { parse_dist("{distribution: lognormal, mu: -5, sigma: 0}"); }, {"delay", "sigma", "sigma=0"});
  expect_config_error([] { parse_dist("{distribution: uniform, min: 20us, max: 10us}"); },
                      {"delay", "min=20us", "max=10us"});
  expect_config_error([] { parse_dist("{distribution: uniform, min: 1us}"); }, {"delay", "needs 'max'"});
  expect_config_error([] { parse_dist("{distribution: pareto, scale: -1ms, shape: 2}"); }, {"delay.scale", "-1ms"});
  expect_config_error([] { parse_dist("{distribution: pareto, scale: 1ms, shape: steep}"); },
                      {"delay.shape", "steep", "not a finite number"});
  expect_config_error([] { parse_dist("{distribution: weibull, scale: 1ms}"); }, {"delay", "weibull", "known"});
  expect_config_error([] { parse_dist("{mean: 1ms}"); }, {"delay", "missing key 'distribution'"});
  expect_config_error([] { parse_dist("{distribution: exponential, mean: 1ms, samples: [1ms]}"); },
                      {"delay.samples", "unknown key"});
  expect_config_error([] { parse_dist("{distribution: exponential, mean: {a: 1}}"); }, {"delay.mean", "expected a scalar"});
  expect_config_error([] { parse_dist("{distribution: empirical, file: empty.csv}"); }, {"delay.file", "empty.csv", "no samples"});
  expect_config_error([] { parse_dist("{distribution: empirical, file: bad_value.csv}"); },
                      {"delay.file", "bad_value.csv:4", "fast"});
  expect_config_error([] { parse_dist("{distribution: empirical, file: quarters_ms.csv, unit: parsecs}"); },
                      {"delay.unit", "parsecs"});
  expect_config_error([] { parse_dist("{distribution: empirical, samples: [1ms, -1ms]}"); }, {"delay.samples[1]", "-1ms"});
}

}  // namespace
}  // namespace collsim
