// The `collsim` subcommands. Each takes the arguments after its name and returns an exit code
// (0 ok, 1 a check failed); bad input is thrown as ConfigError/ScheduleError and reported by
// run_cli() with exit code 2.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace collsim {

using Args = std::vector<std::string>;

int schedule_command(const Args& args, std::ostream& out);
int verify_command(const Args& args, std::ostream& out);
int simulate_command(const Args& args, std::ostream& out);
int calibrate_command(const Args& args, std::ostream& out);
int run_command(const Args& args, std::ostream& out);
int advise_command(const Args& args, std::ostream& out);
int arrivals_command(const Args& args, std::ostream& out);

}  // namespace collsim
