// Command-line handling shared by the benchmark executables: collsim's own parser and rules
// (`--help` prints the usage and exits 0 without measuring anything; a bad value or an unknown
// flag is one line on stderr and exit code 2).
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/experiments/args.hpp"
#include "collsim/models/error.hpp"

namespace collsim::bench {

/// Parses argv with `parser`, then runs `read` (which turns option values into settings and
/// may throw ConfigError). Returns the exit code to stop with (0 after --help, 2 after an
/// error), or nullopt to run the benchmark.
template <class Read>
std::optional<int> parse_bench_args(ArgParser& parser, std::string_view program, int argc, char** argv, Read&& read) {
  try {
    if (!parser.parse(std::vector<std::string>(argv + 1, argv + argc))) {
      fmt::print("{}", parser.help());
      return 0;
    }
    if (!parser.positionals().empty()) {
      throw ConfigError(fmt::format("unexpected argument '{}'", parser.positionals().front()));
    }
    read();
    return std::nullopt;
  } catch (const ConfigError& e) {
    std::string_view message = e.what();
    // The parser names its command first; the program name is printed once, in front.
    if (message.starts_with(program) && message.substr(program.size()).starts_with(": ")) {
      message.remove_prefix(program.size() + 2);
    }
    fmt::print(stderr, "{}: error: {}\n", program, message);
    return 2;
  }
}

/// A rank count option in min_n..max_n (doubling loops stay finite and memory stays sane).
inline Rank parse_rank_count(const std::string& text, std::string_view option, Rank min_n = 2, Rank max_n = 1u << 20) {
  const auto value = parse_unsigned(text, option);
  if (value < min_n || value > max_n) {
    throw ConfigError(fmt::format("{} {} is not in {}..{}", option, value, min_n, max_n));
  }
  return static_cast<Rank>(value);
}

}  // namespace collsim::bench
