// Builds a DelayDistribution from textual key=value parameters, shared by
// the YAML reader and the command-line parser so both accept the same names and units.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/models/distribution.hpp"

namespace collsim::detail {

struct ParamText {
  std::string key;    ///< "min", "median", ...
  std::string text;   ///< the value as written ("20us")
  std::string label;  ///< how to name it in a message: "arrival.jitter.min (line 4)"
};

struct DistributionText {
  std::string kind;     ///< as written: "lognormal", "normal", ...
  std::string label;    ///< the whole distribution: "arrival.jitter (line 3)" or "--distribution"
  std::vector<ParamText> params;
  /// Empirical samples given inline (YAML `samples:` list), seconds.
  std::optional<std::vector<double>> inline_samples_s;
  std::string inline_samples_label;
  /// Relative `file` paths are resolved against this directory (the YAML file's).
  std::filesystem::path base_dir;
};

/// Throws ConfigError naming the label, the key and the text: unknown kind, unknown key,
/// missing or duplicate key, malformed number, or parameters the named constructor rejects
/// (then every given parameter is quoted as written).
DelayDistribution build_distribution(const DistributionText& spec);

/// Parses a plain number (no unit) such as sigma or shape. Throws ConfigError naming label.
double parse_plain_number(std::string_view text, std::string_view label);

/// Parses a probability in [0, 1]. Throws ConfigError naming label and text.
double parse_probability_text(std::string_view text, std::string_view label);

/// Parses a rank (non-negative integer < 2^32). Throws ConfigError naming label and text.
std::uint32_t parse_rank_text(std::string_view text, std::string_view label);

}  // namespace collsim::detail
