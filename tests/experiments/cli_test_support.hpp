// Runs the collsim command line in-process, capturing its exit code and both output streams, as
// the CLI tests of every subcommand do.
#pragma once

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

}  // namespace collsim::test
