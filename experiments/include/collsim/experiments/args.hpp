// A small, strict command-line parser shared by every `collsim` subcommand.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collsim {

/// Declares the options of one subcommand, then parses its arguments.
/// Accepted forms: `--name value`, `--name=value`, `-x value` (aliases), flags `--name`.
class ArgParser {
 public:
  ArgParser(std::string command, std::string summary);

  /// Names a program other than `collsim COMMAND` in usage and errors (the benchmarks).
  ArgParser& program(std::string name);

  /// Declares an option taking a value. `alias` may be "" or a one-letter "-x" form.
  ArgParser& option(std::string name, std::string alias, std::string value_name, std::string help,
                    std::optional<std::string> default_value = std::nullopt);
  /// Declares a boolean flag.
  ArgParser& flag(std::string name, std::string help);
  /// Declares positional arguments (e.g. "FILE..."), collected in order.
  ArgParser& positional(std::string name, std::string help, bool required = true);

  /// Parses `args`. Throws ConfigError naming the argument for unknown options, missing values,
  /// repeated options or missing positionals. Returns false if --help was given (help() then
  /// holds the text to print).
  bool parse(const std::vector<std::string>& args);

  bool has(std::string_view name) const;
  /// The value (or default) of an option; throws ConfigError if absent and without default.
  std::string get(std::string_view name) const;
  std::optional<std::string> get_optional(std::string_view name) const;
  bool flag_set(std::string_view name) const;
  const std::vector<std::string>& positionals() const { return positionals_; }
  std::string help() const;

 private:
  struct Spec {
    std::string name, alias, value_name, help;
    std::optional<std::string> default_value;
    bool is_flag = false;
  };
  const Spec* find(std::string_view token) const;

  std::string command_, summary_;
  std::string invocation_;  ///< what the user typed to run this parser: "collsim run", "collsim_bench_replay"
  std::vector<Spec> specs_;
  std::string positional_name_, positional_help_;
  bool positional_required_ = false;
  bool accepts_positionals_ = false;
  std::map<std::string, std::string, std::less<>> values_;
  std::vector<std::string> positionals_;
};

/// Checks the value of an option naming an output file before any work is done: not empty, not
/// a directory, and its parent directory exists (nothing is created). Returns the path. Throws
/// ConfigError naming `command`, `option` and the path.
std::string output_file_option(const std::string& text, std::string_view command, std::string_view option);

/// Checks the value of an option naming an output directory (created later if missing): not
/// empty, and not an existing non-directory. Throws ConfigError naming `command` and `option`.
std::string output_dir_option(const std::string& text, std::string_view command, std::string_view option);

/// Parses an unsigned integer option value; throws ConfigError naming `what` and the text.
unsigned long long parse_unsigned(std::string_view text, std::string_view what);

/// parse_unsigned for a value held in 32 bits (ranks, n, counts); larger values are an error,
/// not cut to their low bits.
std::uint32_t parse_u32(std::string_view text, std::string_view what);

/// Parses "2..64", "4,8,16" or "8" into a sorted list of values >= 0. Throws ConfigError.
std::vector<unsigned long long> parse_uint_list(std::string_view text, std::string_view what);

}  // namespace collsim
