// Runs the collsim command line in-process, capturing its exit code and both output streams, as
// the CLI tests of every subcommand do.
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "collsim/experiments/cli.hpp"

namespace collsim::test {

struct CliRun {
  int code;
  std::string out, err;
};

inline CliRun run(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

/// The number after "key": in one JSON object printed by a command (-1 and a failure if absent).
inline double json_field(const std::string& json, const std::string& key) {
  const auto pos = json.find("\"" + key + "\":");
  EXPECT_NE(pos, std::string::npos) << key;
  return pos == std::string::npos ? -1.0 : std::stod(json.substr(pos + key.size() + 3));
}

}  // namespace collsim::test
