#include "collsim/experiments/arrival_flags.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>

#include "collsim/experiments/args.hpp"
#include "collsim/experiments/arrival_trace_cli.hpp"
#include "collsim/models/formats/arrival_yaml.hpp"
#include "collsim/models/formats/yaml_reader.hpp"
#include "collsim/models/distribution_params.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/formats/text_file.hpp"
#include "collsim/models/units.hpp"

namespace collsim {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

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

void declare_arrival_flags(ArgParser& parser) {
  parser.option("delay", "", "TIME", "constant delay of the straggler (default: nobody is late)")
      .option("straggler", "", "RANK", "the late rank (default n-1)")
      .option("stragglers", "", "R[:D],...", "several late ranks, e.g. 3:5ms,7:2ms (a rank without :D takes --delay/--distribution)")
      .option("distribution", "", "KIND:K=V,...", "draw the straggler's delay, e.g. lognormal:median=6.97ms,mean=9.5ms")
      .option("jitter", "", "KIND:K=V,...", "delay added independently to every rank, e.g. uniform:min=0,max=20us")
      .option("persistence", "", "P", "probability that a straggler keeps its identity between iterations")
      .option("arrival", "", "YAML|FILE", "arrival model as inline YAML, e.g. '{model: stragglers, rank: 7, delay: 5ms}', or a YAML file of one (arrivals --fit writes them)");
}

std::optional<ArrivalSpec> arrival_from_flags(const ArgParser& p, Rank n, std::string_view command) {
  const auto reject_pair = [&](std::string_view a, std::string_view b) {
    if (p.get_optional(a) && p.get_optional(b)) {
      throw ConfigError(fmt::format("{}: give either --{} or --{}, not both", command, a, b));
    }
  };
  for (const char* other : {"delay", "distribution", "stragglers", "straggler"}) reject_pair("arrival", other);
  reject_pair("delay", "distribution");
  reject_pair("stragglers", "straggler");

  std::optional<Rank> straggler;
  if (auto s = p.get_optional("straggler")) {
    const auto rank = parse_unsigned(*s, "--straggler");
    if (rank >= n) throw ConfigError(fmt::format("{}: --straggler {} is not a rank of n = {} (0..{})", command, rank, n, n - 1));
    straggler = static_cast<Rank>(rank);
  }
  const bool any = p.get_optional("arrival") || p.get_optional("stragglers") || p.get_optional("distribution") ||
                   p.get_optional("delay") || p.get_optional("jitter") || p.get_optional("persistence");
  if (!any) return std::nullopt;

  ArrivalSpec spec;
  if (auto given = p.get_optional("arrival")) {
    // A YAML file (what `arrivals --fit` writes) or the YAML itself: a fit of a long trace holds
    // its delay samples inline and is too long for one argument ("$(cat OUT.yaml)" failed with
    // "Argument list too long"). Relative files inside it are relative to its directory.
    std::string text = *given;
    std::filesystem::path base = std::filesystem::current_path();
    std::error_code ec;
    const bool is_file = !text.empty() && text.find_first_of("{\n") == std::string::npos &&
                         std::filesystem::is_regular_file(text, ec);
    // Without '{' or ':' the text cannot be the map the model is, so it names a file: say what is
    // wrong with it ("expected a map, got a scalar" hid a directory or a typo in the name).
    // '[' opens a YAML list: '[1, 2]' is a model of the wrong type, not a missing file.
    const bool names_a_file =
        (text.find_first_of("{:\n") == std::string::npos && !text.starts_with('[')) ||
        ((text.ends_with(".yaml") || text.ends_with(".yml")) && text.find('{') == std::string::npos);
    if (!is_file && names_a_file) {
      const FileLookup file = look_up_file(text);
      throw ConfigError(fmt::format("{}: --arrival '{}': {} (give a YAML file or the model inline)", command,
                                    quote_excerpt(text, 200),
                                    file.kind == FileLookup::Kind::Missing ? "no such file" : file.why));
    }
    if (is_file) {
      base = std::filesystem::absolute(text, ec).parent_path();
      text = read_text_file(*given, "--arrival file", kConfigFileMaxBytes);
    }
    YAML::Node node;
    try {
      // All documents, not YAML::Load's first: '{model: none},' read as the map, the ',' dropped.
      node = only_document(load_yaml_documents(text), fmt::format("{}: --arrival", command), [&](std::size_t line) {
        return fmt::format(
            "{}: --arrival{}: a second YAML document starts at line {} (after '---'); give one arrival model", command,
            is_file ? fmt::format(" '{}'", *given) : "", line);
      });
    } catch (const YAML::ParserException& e) {
      throw ConfigError(fmt::format("{}: --arrival{} is not valid YAML: {}", command,
                                    is_file ? fmt::format(" '{}'", *given) : "", yaml_parse_problem(e)));
    }
    spec = parse_arrival_yaml(node, "--arrival", n, base);
    if (spec.trace) print_trace_warnings(*spec.trace, std::cerr);  // {model: trace, skip_incomplete: true}
  } else {
    std::optional<DelayDistribution> delay;
    if (auto d = p.get_optional("distribution")) delay = parse_distribution_cli(*d, "--distribution");
    if (auto d = p.get_optional("delay")) delay = DelayDistribution::constant(parse_duration_s(*d, "--delay"), "--delay");
    spec.model = ArrivalModel::Stragglers;
    if (auto list = p.get_optional("stragglers")) {
      spec.stragglers = parse_stragglers_cli(*list, delay, "--stragglers");
    } else {
      // --jitter or --persistence alone keep one straggler (late by 0) for the model to hang on.
      spec.stragglers.push_back({straggler.value_or(n - 1), delay.value_or(DelayDistribution())});
    }
  }
  if (auto j = p.get_optional("jitter")) spec.jitter = parse_distribution_cli(*j, "--jitter");
  if (auto pr = p.get_optional("persistence")) spec.persistence = parse_probability(*pr, "--persistence");
  spec.validate(n, fmt::format("{} arrival", command));
  return spec;
}

}  // namespace collsim
