#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

#include "collsim/experiments/cli.hpp"

int main(int argc, char** argv) {
  // The plot scripts that `collsim run` starts read the algorithm table (which rows are studied,
  // the legend order) from the binary named by COLLSIM_BIN. Without it a spec run directly drew
  // study 2 with stragglar_online as "another" algorithm (critical delay 2.04 instead of 2.03 ms).
  // Set here, not in the library: tests call run_cli in-process, where this executable is a test.
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) setenv("COLLSIM_BIN", self.c_str(), 0);  // one given by the caller wins
  std::vector<std::string> args(argv + 1, argv + argc);
  return collsim::run_cli(args, std::cout, std::cerr);
}
