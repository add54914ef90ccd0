#include "collsim/models/arrival_cli.hpp"

#include <fmt/format.h>

#include <cctype>
#include <set>
#include <string>

#include "collsim/models/error.hpp"
#include "collsim/models/units.hpp"
#include "distribution_params.hpp"
#include "text.hpp"

namespace collsim {
namespace {

using text::trim;

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const auto at = text.find(separator);
    parts.push_back(trim(text.substr(0, at)));
    if (at == std::string_view::npos) break;
    text.remove_prefix(at + 1);
  }
  return parts;
}

}  // namespace

DelayDistribution parse_distribution_cli(std::string_view text, std::string_view what) {
  const std::string_view trimmed = trim(text);
  const auto colon = trimmed.find(':');
  detail::DistributionText spec;
  spec.label = fmt::format("{} '{}'", what, text);
  if (colon == std::string_view::npos) {
    // A bare duration is a constant; anything else is a kind without its parameters.
    if (!trimmed.empty() && (std::isdigit(static_cast<unsigned char>(trimmed.front())) || trimmed.front() == '.' ||
                             trimmed.front() == '-')) {
      return DelayDistribution::constant(parse_duration_s(trimmed, spec.label), spec.label);
    }
    spec.kind = std::string(trimmed);
    return detail::build_distribution(spec);
  }
  spec.kind = std::string(trim(trimmed.substr(0, colon)));
  const auto items = split(trimmed.substr(colon + 1), ',');
  for (const auto item : items) {
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      if (spec.kind == "constant" && items.size() == 1 && !item.empty()) {
        spec.params.push_back({"value", std::string(item), fmt::format("{} value", spec.label)});
        continue;
      }
      throw ConfigError(fmt::format(
          "{}: '{}' is not KEY=VALUE (expected KIND:KEY=VALUE,... e.g. lognormal:median=6.97ms,mean=9.5ms)",
          spec.label, item));
    }
    const std::string key(trim(item.substr(0, eq)));
    spec.params.push_back({key, std::string(trim(item.substr(eq + 1))), fmt::format("{} {}", spec.label, key)});
  }
  return detail::build_distribution(spec);
}

std::vector<StragglerSpec> parse_stragglers_cli(std::string_view text,
                                                const std::optional<DelayDistribution>& default_delay,
                                                std::string_view what) {
  std::vector<StragglerSpec> stragglers;
  std::set<std::uint32_t> seen;
  for (const auto entry : split(text, ',')) {
    const std::string where = fmt::format("{} '{}'", what, text);
    if (entry.empty()) {
      throw ConfigError(fmt::format("{}: empty entry (expected RANK[:DELAY],... e.g. 3:5ms,7:2ms)", where));
    }
    const auto colon = entry.find(':');
    const std::string_view rank_text = trim(entry.substr(0, colon));
    const std::string entry_label = fmt::format("{} entry '{}'", where, entry);
    const std::uint32_t rank = detail::parse_rank_text(rank_text, entry_label);
    DelayDistribution delay;
    if (colon != std::string_view::npos) {
      const std::string_view delay_text = trim(entry.substr(colon + 1));
      delay = DelayDistribution::constant(parse_duration_s(delay_text, entry_label), entry_label);
    } else if (default_delay) {
      delay = *default_delay;
    } else {
      throw ConfigError(fmt::format("{}: straggler rank {} has no delay (write {}:5ms, or give --delay or "
                                    "--distribution)",
                                    entry_label, rank, rank));
    }
    if (!seen.insert(rank).second) {
      throw ConfigError(fmt::format("{}: rank {} is given twice", entry_label, rank));
    }
    stragglers.push_back({rank, delay});
  }
  return stragglers;
}

double parse_probability(std::string_view text, std::string_view what) {
  return detail::parse_probability_text(trim(text), fmt::format("{} '{}'", what, text));
}

}  // namespace collsim
