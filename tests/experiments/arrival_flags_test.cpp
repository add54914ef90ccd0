// The arrival flags shared by `collsim simulate` and `collsim advise` (arrival_flags.hpp).
#include "collsim/experiments/arrival_flags.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli_test_support.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/link_model.hpp"
#include "test_support.hpp"

namespace collsim {
namespace {

using test::expect_config_error;

const std::filesystem::path kDelays = std::filesystem::path(COLLSIM_TEST_DATA_DIR) / "delays";

TEST(ArrivalCli, Stragglers) {
  const auto list = parse_stragglers_cli("3:5ms,7:2ms");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].rank, 3u);
  EXPECT_DOUBLE_EQ(list[0].delay.parameters().value_s, 5e-3);
  EXPECT_EQ(list[1].rank, 7u);
  EXPECT_DOUBLE_EQ(list[1].delay.parameters().value_s, 2e-3);
  const auto drawn = parse_stragglers_cli("3, 7", DelayDistribution::exponential(1e-3));
  EXPECT_EQ(drawn[1].delay.kind(), DistributionKind::Exponential);
}

TEST(ArrivalCli, Distributions) {
  const auto d = parse_distribution_cli("lognormal:median=6.97ms,mean=9.5ms");
  EXPECT_NEAR(d.mean(), 9.5e-3, 1e-15);
  EXPECT_DOUBLE_EQ(parse_distribution_cli("constant:5ms").parameters().value_s, 5e-3);
  EXPECT_DOUBLE_EQ(parse_distribution_cli("5ms").parameters().value_s, 5e-3);
  EXPECT_DOUBLE_EQ(parse_distribution_cli("uniform:min=0,max=20us").parameters().max_s, 20e-6);
  EXPECT_DOUBLE_EQ(parse_distribution_cli("truncated_normal:mean=5ms,stddev=1ms,hi=8ms").parameters().hi_s, 8e-3);
  EXPECT_DOUBLE_EQ(parse_distribution_cli("pareto:scale=1ms,shape=2.5").parameters().shape, 2.5);
  const std::string file = (kDelays / "quarters_ms.csv").string();
  EXPECT_DOUBLE_EQ(parse_distribution_cli("empirical:file=" + file).mean(), 2.5e-3);
  EXPECT_DOUBLE_EQ(parse_probability("0.9"), 0.9);
}

TEST(ArrivalCli, BadInputNamesFlagAndValue) {
  expect_config_error([] { parse_stragglers_cli("3:-5ms"); }, {"--stragglers", "3:-5ms", "-5ms"});
  expect_config_error([] { parse_stragglers_cli("x:5ms"); }, {"--stragglers", "'x'", "not a rank"});
  expect_config_error([] { parse_stragglers_cli("3:5ms,3:1ms"); }, {"--stragglers", "rank 3", "twice"});
  expect_config_error([] { parse_stragglers_cli("3"); }, {"--stragglers", "rank 3", "no delay"});
  expect_config_error([] { parse_stragglers_cli("3:5ms,,7:1ms"); }, {"--stragglers", "empty entry"});
  expect_config_error([] { parse_stragglers_cli("3:5 parsecs"); }, {"--stragglers", "parsecs"});
  expect_config_error([] { parse_distribution_cli("lognormal:median=9.5ms,mean=6.97ms"); },
                      {"--distribution", "median=9.5ms", "mean=6.97ms"});
  expect_config_error([] { parse_distribution_cli("lognormal:medain=1ms,mean=2ms"); },
                      {"--distribution", "medain", "unknown key"});
  expect_config_error([] { parse_distribution_cli("gamma:k=2"); }, {"--distribution", "gamma", "known"});
  expect_config_error([] { parse_distribution_cli("uniform:min=1ms"); }, {"--distribution", "max"});
  expect_config_error([] { parse_distribution_cli("uniform:1ms"); }, {"--distribution", "'1ms'", "KEY=VALUE"});
  expect_config_error([] { parse_distribution_cli("uniform:min=1ms,min=2ms,max=3ms"); }, {"min", "twice"});
  expect_config_error([] { parse_distribution_cli(""); }, {"--distribution", "unknown distribution"});
  expect_config_error([] { parse_distribution_cli("-5ms"); }, {"--distribution", "-5ms"});
  expect_config_error([] { parse_distribution_cli("empirical:file=/nonexistent/d.csv"); },
                      {"--distribution", "/nonexistent/d.csv"});
  expect_config_error([] { parse_probability("1.2"); }, {"--persistence", "1.2"});
  expect_config_error([] { parse_probability("often"); }, {"--persistence", "often"});
}

// Both commands follow one set of rules: the same contradicting pairs are refused by both, with
// the same message naming both flags.
TEST(ArrivalFlags, SimulateAndAdviseRejectTheSamePairs) {
  const std::vector<std::vector<std::string>> pairs = {
      {"--delay", "5ms", "--distribution", "exponential:mean=1ms"},
      {"--stragglers", "3:5ms", "--straggler", "3"},
      {"--arrival", "{model: stragglers, rank: 3, delay: 5ms}", "--delay", "5ms"},
      {"--arrival", "{model: stragglers, rank: 3, delay: 5ms}", "--straggler", "3"},
  };
  for (const auto& pair : pairs) {
    for (const std::string command : {"simulate", "advise"}) {
      std::vector<std::string> args{command, "--algo", "ring", "-n", "8", "--size", "1MiB"};
      if (command == "advise") args = {command, "-n", "8", "--size", "1MiB", "--algorithms", "ring"};
      args.insert(args.end(), pair.begin(), pair.end());
      const auto r = test::run(args);
      EXPECT_EQ(r.code, 2) << command << " " << pair[0] << " " << pair[2];
      EXPECT_NE(r.err.find(pair[0] + " or " + pair[2]), std::string::npos) << r.err;
    }
  }
}

// --arrival took YAML::Load's first document: what followed it was dropped, a trailing ',' too.
TEST(ArrivalFlags, InlineArrivalIsOneWholeDocument) {
  const auto with = [](const std::string& arrival) {
    return test::run({"simulate", "--algo", "ring", "-n", "8", "--size", "1MiB", "--arrival", arrival});
  };
  EXPECT_EQ(with("{model: stragglers, rank: 7, delay: 5ms}").code, 0);
  const auto comma = with("{model: stragglers, rank: 7, delay: 5ms},");
  EXPECT_EQ(comma.code, 2);
  EXPECT_NE(comma.err.find("--arrival is not valid YAML: ',' cannot start a value here"), std::string::npos)
      << comma.err;
  const auto two = with("{model: none}\n---\n{model: stragglers, rank: 7, delay: 5ms}");
  EXPECT_EQ(two.code, 2);
  EXPECT_NE(two.err.find("--arrival: a second YAML document starts at line 3"), std::string::npos) << two.err;
}

// simulate used to treat `--delay 0 --distribution ...` as valid and ignored a --straggler that
// was out of range when --stragglers was given; both commands now check the rank against n.
TEST(ArrivalFlags, StragglerRankCheckedAgainstN) {
  for (const std::string command : {"simulate", "advise"}) {
    std::vector<std::string> args{command, "--algo", "ring", "-n", "8", "--straggler", "8", "--delay", "1ms"};
    if (command == "advise") args = {command, "-n", "8", "--size", "1MiB", "--straggler", "8", "--delay", "1ms"};
    const auto r = test::run(args);
    EXPECT_EQ(r.code, 2) << command;
    EXPECT_NE(r.err.find("--straggler 8"), std::string::npos) << r.err;
  }
}

// simulate gained the flags only advise had (--arrival, --persistence) from the shared parser.
TEST(ArrivalFlags, SimulateAcceptsArrivalYaml) {
  const auto r = test::run({"simulate", "--algo", "ring", "-n", "4", "--size", "1MiB", "--json", "--arrival",
                            "{model: stragglers, rank: 2, delay: 1ms}"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"straggler\":2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"delay_s\":0.001"), std::string::npos) << r.out;
}

TEST(StartMode, OneParserForFlagsAndSpecs) {
  EXPECT_EQ(parse_start_mode("eager", "x"), StartMode::Eager);
  EXPECT_EQ(parse_start_mode("barrier", "x"), StartMode::Barrier);
  expect_config_error([] { parse_start_mode("lazy", "--start"); }, {"--start", "'lazy'", "barrier, eager"});
  for (const std::string command : {"simulate", "advise"}) {
    std::vector<std::string> args{command, "--algo", "ring", "-n", "4", "--start", "lazy"};
    if (command == "advise") args = {command, "-n", "4", "--size", "1MiB", "--start", "lazy"};
    const auto r = test::run(args);
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("unknown start mode 'lazy' (known: barrier, eager)"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace collsim
