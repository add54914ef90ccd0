// The `collsim` subcommands. Each takes the arguments after its name and returns an exit code
// (below); bad input is thrown as ConfigError/ScheduleError and reported by run_cli() with
// exit code 2.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace collsim {

using Args = std::vector<std::string>;

/// Exit codes of every subcommand (README, "Exit codes").
inline constexpr int kExitCheckFailed = 1;  ///< verify found a failing schedule
inline constexpr int kExitBadInput = 2;     ///< bad input or a resource that cannot be used; nothing written
inline constexpr int kExitPlotFailed = 3;   ///< results written and complete, but a plot script failed
inline constexpr int kExitInternal = 70;    ///< a bug in collsim

int schedule_command(const Args& args, std::ostream& out);
int verify_command(const Args& args, std::ostream& out);
int simulate_command(const Args& args, std::ostream& out);
int calibrate_command(const Args& args, std::ostream& out);
int run_command(const Args& args, std::ostream& out);
int advise_command(const Args& args, std::ostream& out);
int algorithms_command(const Args& args, std::ostream& out);
int arrivals_command(const Args& args, std::ostream& out);

}  // namespace collsim
