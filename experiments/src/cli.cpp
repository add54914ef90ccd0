#include "collsim/experiments/cli.hpp"

namespace collsim {

int run_cli(const std::vector<std::string>& /*args*/, std::ostream& out, std::ostream& /*err*/) {
  out << "collsim\n";
  return 0;
}

}  // namespace collsim
