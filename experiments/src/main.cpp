#include <iostream>
#include <string>
#include <vector>

#include "collsim/experiments/cli.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return collsim::run_cli(args, std::cout, std::cerr);
}
