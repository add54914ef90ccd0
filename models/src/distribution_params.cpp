#include "collsim/models/distribution_params.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "collsim/models/error.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/units.hpp"

namespace collsim::detail {
namespace {

struct KindInfo {
  std::string_view name;
  DistributionKind kind;
  std::string_view keys;  // comma-separated, for messages and the unknown-key check
};

constexpr std::array<KindInfo, 8> kKinds{{
    {"constant", DistributionKind::Constant, "value"},
    {"uniform", DistributionKind::Uniform, "min, max"},
    {"truncated_normal", DistributionKind::TruncatedNormal, "mean, stddev, lo, hi"},
    {"normal", DistributionKind::TruncatedNormal, "mean, stddev, lo, hi"},
    {"exponential", DistributionKind::Exponential, "mean, shift"},
    {"lognormal", DistributionKind::Lognormal, "mu, sigma, median, mean"},
    {"pareto", DistributionKind::Pareto, "scale, shape"},
    {"empirical", DistributionKind::Empirical, "file, column, unit, samples"},
}};

std::string known_kinds() {
  std::string names;
  for (const auto& k : kKinds) names += fmt::format("{}{}", names.empty() ? "" : ", ", k.name);
  return names;
}

bool key_allowed(std::string_view keys, std::string_view key) {
  while (!keys.empty()) {
    const auto comma = keys.find(',');
    if (keys.substr(0, comma) == key) return true;
    if (comma == std::string_view::npos) break;
    keys.remove_prefix(comma + 2);
  }
  return false;
}

// Lookup of the given parameters with the messages every kind needs.
class Params {
 public:
  explicit Params(const DistributionText& spec) : spec_(spec) {
    for (const auto& p : spec.params) {
      if (!by_key_.emplace(p.key, &p).second) {
        throw ConfigError(fmt::format("{}: '{}' is given twice", p.label, p.key));
      }
    }
  }

  bool has(const std::string& key) const { return by_key_.count(key) != 0; }

  const ParamText& get(const std::string& key) const {
    const auto it = by_key_.find(key);
    if (it == by_key_.end()) {
      throw ConfigError(fmt::format("{}: {} distribution needs '{}'{}", spec_.label, spec_.kind, key,
                                    given().empty() ? std::string() : fmt::format(" (given: {})", given())));
    }
    return *it->second;
  }

  double duration(const std::string& key) const {
    const auto& p = get(key);
    return parse_duration_s(p.text, p.label);
  }

  double duration_or(const std::string& key, double fallback) const {
    return has(key) ? duration(key) : fallback;
  }

  double number(const std::string& key) const {
    const auto& p = get(key);
    return parse_plain_number(p.text, p.label);
  }

  std::string given() const {
    std::string text;
    for (const auto& p : spec_.params) text += fmt::format("{}{}={}", text.empty() ? "" : ", ", p.key, p.text);
    return text;
  }

 private:
  const DistributionText& spec_;
  std::map<std::string, const ParamText*> by_key_;
};

DelayDistribution build_lognormal(const Params& p, const std::string& label) {
  const bool mu = p.has("mu"), sigma = p.has("sigma"), median = p.has("median"), mean = p.has("mean");
  if (mu && sigma && !median && !mean) return DelayDistribution::lognormal(p.number("mu"), p.number("sigma"), label);
  if (median && mean && !mu && !sigma) {
    return DelayDistribution::lognormal_from_median_mean(p.duration("median"), p.duration("mean"), label);
  }
  if (median && sigma && !mu && !mean) {
    return DelayDistribution::lognormal_from_median_sigma(p.duration("median"), p.number("sigma"), label);
  }
  throw ConfigError(fmt::format(
      "{}: lognormal needs exactly one of (mu, sigma), (median, mean) or (median, sigma); given: {}", label,
      p.given()));
}

DelayDistribution build_empirical(const DistributionText& spec, const Params& p) {
  if (spec.inline_samples_s) {
    if (p.has("file") || p.has("column") || p.has("unit")) {
      throw ConfigError(fmt::format("{}: empirical takes either 'samples' or 'file', not both (given: {})",
                                    spec.label, p.given()));
    }
    return DelayDistribution::empirical(*spec.inline_samples_s, "inline samples", spec.inline_samples_label);
  }
  const auto& file = p.get("file");
  std::filesystem::path path(file.text);
  if (path.is_relative() && !spec.base_dir.empty()) path = spec.base_dir / path;
  std::optional<double> unit_s;
  if (p.has("unit")) {
    const auto& unit = p.get("unit");
    // "ms" means 1 ms per bare number; reuse the duration parser so the unit names match.
    unit_s = parse_duration_s(fmt::format("1{}", unit.text), unit.label);
    if (!(unit_s > 0.0) || unit.text.empty()) {
      throw ConfigError(fmt::format("{}: '{}' is not a time unit (s, ms, us, ns)", unit.label, quote_excerpt(unit.text)));
    }
  }
  const std::string column = p.has("column") ? p.get("column").text : std::string();
  return DelayDistribution::empirical_csv(path, column, unit_s, file.label);
}

DelayDistribution build_checked(const DistributionText& spec, DistributionKind kind, const Params& p) {
  const std::string& label = spec.label;
  switch (kind) {
    case DistributionKind::Constant:
      return DelayDistribution::constant(p.duration("value"), label);
    case DistributionKind::Uniform:
      return DelayDistribution::uniform(p.duration("min"), p.duration("max"), label);
    case DistributionKind::TruncatedNormal: {
      double hi_s = DelayDistribution::kInfinity;
      if (p.has("hi") && p.get("hi").text != "inf") hi_s = p.duration("hi");
      return DelayDistribution::truncated_normal(p.duration("mean"), p.duration("stddev"),
                                                 p.duration_or("lo", 0.0), hi_s, label);
    }
    case DistributionKind::Exponential:
      return DelayDistribution::exponential(p.duration("mean"), p.duration_or("shift", 0.0), label);
    case DistributionKind::Lognormal:
      return build_lognormal(p, label);
    case DistributionKind::Pareto:
      return DelayDistribution::pareto(p.duration("scale"), p.number("shape"), label);
    case DistributionKind::Empirical:
      return build_empirical(spec, p);
  }
  throw InternalError("unhandled distribution kind");
}

}  // namespace

DelayDistribution build_distribution(const DistributionText& spec) {
  const auto info = std::find_if(kKinds.begin(), kKinds.end(), [&](const KindInfo& k) { return k.name == spec.kind; });
  if (info == kKinds.end()) {
    throw ConfigError(fmt::format("{}: unknown distribution '{}' (known: {})", spec.label, quote_excerpt(spec.kind), known_kinds()));
  }
  for (const auto& p : spec.params) {
    if (!key_allowed(info->keys, p.key)) {
      throw ConfigError(fmt::format("{}: unknown key '{}' for a {} distribution (known keys: {})", p.label, quote_excerpt(p.key),
                                    info->name, info->keys));
    }
  }
  if (spec.inline_samples_s && info->kind != DistributionKind::Empirical) {
    throw ConfigError(fmt::format("{}: unknown key 'samples' for a {} distribution (known keys: {})",
                                  spec.inline_samples_label, info->name, info->keys));
  }
  const Params params(spec);
  // The named constructors see numbers in seconds only, so their messages get the parameters
  // as the user wrote them.
  const std::string given = params.given();
  try {
    return build_checked(spec, info->kind, params);
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    if (given.empty() || message.find(given) != std::string::npos) throw;
    throw ConfigError(fmt::format("{} (given: {})", message, given));
  }
}

double parse_plain_number(std::string_view text, std::string_view label) {
  double value = 0.0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(value)) {
    throw ConfigError(fmt::format("{}: '{}' is not a finite number", label, quote_excerpt(text)));
  }
  return value;
}

double parse_probability_text(std::string_view text, std::string_view label) {
  const double p = parse_plain_number(text, label);
  if (p < 0.0 || p > 1.0) throw ConfigError(fmt::format("{}: '{}' is not a probability in [0, 1]", label, quote_excerpt(text)));
  return p;
}

std::uint32_t parse_rank_text(std::string_view text, std::string_view label) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value > std::numeric_limits<std::uint32_t>::max()) {
    throw ConfigError(fmt::format("{}: '{}' is not a rank (a non-negative integer)", label, quote_excerpt(text)));
  }
  return static_cast<std::uint32_t>(value);
}

}  // namespace collsim::detail
