#include "collsim/experiments/cli.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace collsim {
namespace {

struct CliRun {
  int code;
  std::string out, err;
};

CliRun run(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

TEST(Cli, HelpForEveryCommand) {
  for (const char* cmd : {"schedule", "verify", "simulate"}) {
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

TEST(Cli, VerifyReportsPassedAndFailed) {
  const auto r = run({"verify", "--algo", "ring", "--n", "2..5"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("4 passed, 0 failed"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace collsim
