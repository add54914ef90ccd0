// The `collsim` command line: parses arguments, dispatches to subcommands, prints results.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace collsim {

/// Runs `collsim ARGS...` (args excludes the program name). Output goes to `out`, errors to
/// `err` as one line. Returns the exit code: 0 success, 1 a failed check (e.g. verification),
/// 2 bad input. Never throws.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace collsim
