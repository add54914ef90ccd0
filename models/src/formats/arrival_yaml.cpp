#include "collsim/models/formats/arrival_yaml.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "collsim/models/formats/arrival_trace.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/formats/yaml_reader.hpp"
#include "collsim/models/units.hpp"
#include "collsim/models/distribution_params.hpp"
#include "collsim/models/formats/yaml_reader.hpp"

namespace collsim {
namespace {

// Shortest text that reads back as the same double, so resolved files stay readable
// ("0.005", not "0.0050000000000000001").
std::string number_text(double value) { return fmt::format("{}", value); }
// Times are written with their unit: a bare non-zero duration is refused on reading.
std::string seconds_text(double value) { return fmt::format("{}s", value); }

void expect_type(const YAML::Node& node, YAML::NodeType::value type, std::string_view path,
                 std::string_view expected) {
  if (node.Type() != type) {
    throw ConfigError(fmt::format("{}: expected {}, got {}", yaml_node_label(path, node), expected, yaml_type_name(node)));
  }
}

const std::string& scalar(const YAML::Node& node, std::string_view path) {
  expect_type(node, YAML::NodeType::Scalar, path, "a scalar");
  return node.Scalar();
}

// The entries of a map in file order, with unknown and repeated keys rejected.
YamlEntries map_entries(const YAML::Node& node, std::string_view path, std::span<const std::string_view> known) {
  expect_type(node, YAML::NodeType::Map, path, "a map");
  static const YamlKeyRules kRules = labelled_key_rules(
      yaml_node_label, [](const YAML::Node& key, std::string_view map_path) {
        return scalar(key, fmt::format("{} key", map_path));
      });
  return checked_map_entries(node, path, known, kRules);
}

DelayDistribution parse_delay(const YAML::Node& node, std::string_view path, const std::filesystem::path& base_dir) {
  if (node.IsScalar()) {
    return DelayDistribution::constant(parse_duration_s(node.Scalar(), yaml_node_label(path, node)), yaml_node_label(path, node));
  }
  if (!node.IsMap()) {
    throw ConfigError(fmt::format("{}: expected a duration or a distribution map, got {}", yaml_node_label(path, node),
                                  yaml_type_name(node)));
  }
  return parse_distribution_yaml(node, path, base_dir);
}

std::uint32_t parse_rank(const YAML::Node& node, std::string_view path, std::optional<std::uint32_t> n) {
  const std::string where = yaml_node_label(path, node);
  const std::uint32_t rank = detail::parse_rank_text(scalar(node, path), where);
  if (n && rank >= *n) {
    throw ConfigError(fmt::format("{}: rank {} is out of range for n = {} ranks (0..{})", where, rank, *n, *n - 1));
  }
  return rank;
}

std::vector<StragglerSpec> parse_stragglers_list(const YAML::Node& node, std::string_view path,
                                                 std::optional<std::uint32_t> n,
                                                 const std::filesystem::path& base_dir) {
  expect_type(node, YAML::NodeType::Sequence, path, "a list of {rank, delay} maps");
  std::vector<StragglerSpec> stragglers;
  for (std::size_t j = 0; j < node.size(); ++j) {
    const std::string item_path = fmt::format("{}[{}]", path, j);
    static constexpr std::string_view kStragglerKeys[] = {"rank", "delay"};
    const auto entries = map_entries(node[j], item_path, kStragglerKeys);
    const YAML::Node* rank = find_entry(entries, "rank");
    const YAML::Node* delay = find_entry(entries, "delay");
    if (!rank || !delay) {
      throw ConfigError(fmt::format("{}: a straggler needs both 'rank' and 'delay'", yaml_node_label(item_path, node[j])));
    }
    stragglers.push_back({parse_rank(*rank, item_path + ".rank", n), parse_delay(*delay, item_path + ".delay", base_dir)});
  }
  return stragglers;
}

void check_distinct(const std::vector<StragglerSpec>& stragglers, const std::vector<std::string>& where) {
  std::map<std::uint32_t, std::size_t> first;
  for (std::size_t j = 0; j < stragglers.size(); ++j) {
    const auto [it, fresh] = first.emplace(stragglers[j].rank, j);
    if (!fresh) {
      throw ConfigError(fmt::format("{}: rank {} is already a straggler (entry {})", where[j], stragglers[j].rank,
                                    it->second));
    }
  }
}

// model: trace. The file is read here, once; a relative name is relative to base_dir. Errors from
// the trace itself keep their file:line and gain the YAML key and line that named the file.
void parse_trace(const YamlEntries& entries, std::string_view path, const YAML::Node& node,
                 std::optional<std::uint32_t> n, const std::filesystem::path& base_dir, ArrivalSpec& spec) {
  const YAML::Node* file = find_entry(entries, "file");
  if (!file) throw ConfigError(fmt::format("{}: model 'trace' needs 'file: TRACE.csv'", yaml_node_label(path, node)));
  const std::string file_path = fmt::format("{}.file", path);
  const std::filesystem::path name = scalar(*file, file_path);
  // An empty name resolved to the spec's own directory and was reported as "is a directory".
  if (name.empty())
    throw ConfigError(fmt::format("{}: is empty (give the trace file)", yaml_node_label(file_path, *file)));
  const std::filesystem::path resolved = name.is_absolute() || base_dir.empty() ? name : base_dir / name;
  if (const YAML::Node* communicator = find_entry(entries, "communicator")) {
    const std::string key = fmt::format("{}.communicator", path);
    spec.trace_options.communicator = scalar(*communicator, key);
    if (spec.trace_options.communicator->empty()) {
      throw ConfigError(fmt::format("{}: needs a communicator id (header.id, e.g. 0x7f8c496ae9f661)",
                                    yaml_node_label(key, *communicator)));
    }
  }
  if (const YAML::Node* skip = find_entry(entries, "skip_incomplete")) {
    const std::string key = fmt::format("{}.skip_incomplete", path);
    const std::string& text = scalar(*skip, key);
    if (text != "true" && text != "false") {
      throw ConfigError(fmt::format("{}: '{}' must be true or false", yaml_node_label(key, *skip), quote_excerpt(text)));
    }
    spec.trace_options.skip_incomplete = text == "true";
  }
  ArrivalTrace trace;
  try {
    trace = read_arrival_trace(resolved, n, spec.trace_options);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", yaml_node_label(file_path, *file), e.what()));
  }
  if (const YAML::Node* iteration = find_entry(entries, "iteration")) {
    const std::string iteration_path = fmt::format("{}.iteration", path);
    const std::string where = yaml_node_label(iteration_path, *iteration);
    const std::string& text = scalar(*iteration, iteration_path);
    std::uint64_t label = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), label);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
      throw ConfigError(fmt::format("{}: '{}' is not an iteration label (a non-negative integer)", where, text));
    }
    spec.trace = std::make_shared<const ArrivalTrace>(std::move(trace));
    try {
      spec.reduce_to_iteration(label);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: {}", where, e.what()));
    }
  } else {
    spec.trace = std::make_shared<const ArrivalTrace>(std::move(trace));
  }
  spec.trace_file = std::filesystem::absolute(resolved).lexically_normal().string();
}

}  // namespace

DelayDistribution parse_distribution_yaml(const YAML::Node& node, std::string_view path,
                                          const std::filesystem::path& base_dir) {
  if (node.IsScalar()) return parse_delay(node, path, base_dir);
  expect_type(node, YAML::NodeType::Map, path, "a distribution map {distribution: ..., ...}");
  detail::DistributionText text;
  text.label = yaml_node_label(path, node);
  text.base_dir = base_dir;
  bool has_kind = false;
  std::set<std::string> seen;
  for (const auto& entry : node) {
    const std::string key = scalar(entry.first, fmt::format("{} key", path));
    const std::string key_path = fmt::format("{}.{}", path, key);
    if (!seen.insert(key).second) {
      throw ConfigError(fmt::format("{}: key '{}' is given twice", yaml_node_label(key_path, entry.first), key));
    }
    if (key == "distribution") {
      text.kind = scalar(entry.second, key_path);
      has_kind = true;
    } else if (key == "samples") {
      expect_type(entry.second, YAML::NodeType::Sequence, key_path, "a list of durations");
      std::vector<double> samples;
      for (std::size_t i = 0; i < entry.second.size(); ++i) {
        const std::string item = fmt::format("{}[{}]", key_path, i);
        samples.push_back(parse_duration_s(scalar(entry.second[i], item), yaml_node_label(item, entry.second[i])));
      }
      text.inline_samples_s = std::move(samples);
      text.inline_samples_label = yaml_node_label(key_path, entry.second);
    } else {
      text.params.push_back({key, scalar(entry.second, key_path), yaml_node_label(key_path, entry.second)});
    }
  }
  if (!has_kind) {
    throw ConfigError(fmt::format(
        "{}: missing key 'distribution' (constant, uniform, truncated_normal, exponential, lognormal, pareto, "
        "empirical)",
        text.label));
  }
  return detail::build_distribution(text);
}

ArrivalSpec parse_arrival_yaml(const YAML::Node& node, std::string_view path, std::optional<std::uint32_t> n,
                               const std::filesystem::path& base_dir) {
  expect_type(node, YAML::NodeType::Map, path, "a map {model: ..., ...}");
  const YAML::Node model_node = yaml_child(node, "model");
  if (!model_node) {
    throw ConfigError(fmt::format("{}: missing key 'model' (none, explicit, stragglers, distribution)",
                                  yaml_node_label(path, node)));
  }
  const std::string model_path = fmt::format("{}.model", path);
  const std::string& model = scalar(model_node, model_path);

  ArrivalSpec spec;
  std::vector<std::string_view> known{"model", "jitter"};
  if (model == "none") {
    spec.model = ArrivalModel::None;
  } else if (model == "explicit") {
    spec.model = ArrivalModel::Explicit;
    known.push_back("arrival");
  } else if (model == "stragglers" || model == "distribution") {
    spec.model = ArrivalModel::Stragglers;
    known.insert(known.end(), {"stragglers", "rank", "ranks", "delay", "persistence", "persistence_mode"});
  } else if (model == "trace") {
    spec.model = ArrivalModel::Trace;
    known.insert(known.end(), {"file", "iteration", "communicator", "skip_incomplete"});
  } else {
    throw ConfigError(fmt::format("{}: unknown arrival model '{}' (known: none, explicit, stragglers, distribution, trace)",
                                  yaml_node_label(model_path, model_node), model));
  }
  const auto entries = map_entries(node, path, known);
  const auto key_path = [&](std::string_view key) { return fmt::format("{}.{}", path, key); };

  if (const YAML::Node* jitter = find_entry(entries, "jitter")) {
    spec.jitter = parse_delay(*jitter, key_path("jitter"), base_dir);
  }
  if (spec.model == ArrivalModel::Explicit) {
    const YAML::Node* list = find_entry(entries, "arrival");
    if (!list) throw ConfigError(fmt::format("{}: model 'explicit' needs 'arrival: [t0, t1, ...]'", yaml_node_label(path, node)));
    expect_type(*list, YAML::NodeType::Sequence, key_path("arrival"), "a list of durations");
    for (std::size_t r = 0; r < list->size(); ++r) {
      const std::string item = fmt::format("{}[{}]", key_path("arrival"), r);
      spec.arrival_s.push_back(parse_duration_s(scalar((*list)[r], item), yaml_node_label(item, (*list)[r])));
    }
    if (n && spec.arrival_s.size() != *n) {
      throw ConfigError(fmt::format("{}: {} arrival times given but there are n = {} ranks",
                                    yaml_node_label(key_path("arrival"), *list), spec.arrival_s.size(), *n));
    }
  }
  if (spec.model == ArrivalModel::Trace) parse_trace(entries, path, node, n, base_dir, spec);
  if (spec.model == ArrivalModel::Stragglers) {
    const YAML::Node* list = find_entry(entries, "stragglers");
    const YAML::Node* rank = find_entry(entries, "rank");
    const YAML::Node* ranks = find_entry(entries, "ranks");
    const YAML::Node* delay = find_entry(entries, "delay");
    std::vector<std::string> where;
    if (list) {
      if (rank || ranks || delay) {
        throw ConfigError(fmt::format("{}: give either 'stragglers: [...]' or 'rank'/'ranks' with 'delay', not both",
                                      yaml_node_label(path, node)));
      }
      spec.stragglers = parse_stragglers_list(*list, key_path("stragglers"), n, base_dir);
      for (std::size_t j = 0; j < spec.stragglers.size(); ++j) {
        where.push_back(yaml_node_label(fmt::format("{}[{}].rank", key_path("stragglers"), j), (*list)[j]["rank"]));
      }
    } else {
      if ((rank != nullptr) == (ranks != nullptr) || !delay) {
        throw ConfigError(fmt::format(
            "{}: model '{}' needs 'stragglers: [{{rank, delay}}, ...]', or 'rank' (or 'ranks') with 'delay'",
            yaml_node_label(path, node), model));
      }
      const DelayDistribution shared = parse_delay(*delay, key_path("delay"), base_dir);
      if (rank) {
        spec.stragglers.push_back({parse_rank(*rank, key_path("rank"), n), shared});
        where.push_back(yaml_node_label(key_path("rank"), *rank));
      } else {
        expect_type(*ranks, YAML::NodeType::Sequence, key_path("ranks"), "a list of ranks");
        for (std::size_t j = 0; j < ranks->size(); ++j) {
          const std::string item = fmt::format("{}[{}]", key_path("ranks"), j);
          spec.stragglers.push_back({parse_rank((*ranks)[j], item, n), shared});
          where.push_back(yaml_node_label(item, (*ranks)[j]));
        }
      }
    }
    if (spec.stragglers.empty()) {
      throw ConfigError(fmt::format("{}: model '{}' needs at least one straggler", yaml_node_label(path, node), model));
    }
    check_distinct(spec.stragglers, where);
    if (const YAML::Node* p = find_entry(entries, "persistence")) {
      spec.persistence = detail::parse_probability_text(scalar(*p, key_path("persistence")),
                                                        yaml_node_label(key_path("persistence"), *p));
    }
    if (const YAML::Node* mode = find_entry(entries, "persistence_mode")) {
      const std::string& text = scalar(*mode, key_path("persistence_mode"));
      if (text == "markov") {
        spec.persistence_mode = PersistenceMode::Markov;
      } else if (text == "anchored") {
        spec.persistence_mode = PersistenceMode::Anchored;
      } else {
        throw ConfigError(fmt::format("{}: unknown persistence_mode '{}' (known: markov, anchored)",
                                      yaml_node_label(key_path("persistence_mode"), *mode), text));
      }
    }
  }
  const std::string where = yaml_node_label(path, node);
  if (n) {
    spec.validate(*n, where);
  } else {
    spec.validate(where);
  }
  return spec;
}

YAML::Node distribution_to_yaml(const DelayDistribution& distribution) {
  YAML::Node node;
  node["distribution"] = std::string(distribution_kind_name(distribution.kind()));
  const auto& p = distribution.parameters();
  switch (distribution.kind()) {
    case DistributionKind::Constant:
      node["value"] = seconds_text(p.value_s);
      break;
    case DistributionKind::Uniform:
      node["min"] = seconds_text(p.min_s);
      node["max"] = seconds_text(p.max_s);
      break;
    case DistributionKind::TruncatedNormal:
      node["mean"] = seconds_text(p.mean_s);
      node["stddev"] = seconds_text(p.stddev_s);
      node["lo"] = seconds_text(p.lo_s);
      if (std::isinf(p.hi_s)) {
        node["hi"] = "inf";
      } else {
        node["hi"] = seconds_text(p.hi_s);
      }
      break;
    case DistributionKind::Exponential:
      node["mean"] = seconds_text(p.mean_s);
      node["shift"] = seconds_text(p.shift_s);
      break;
    case DistributionKind::Lognormal:
      node["mu"] = number_text(p.mu);
      node["sigma"] = number_text(p.sigma);
      break;
    case DistributionKind::Pareto:
      node["scale"] = seconds_text(p.scale_s);
      node["shape"] = number_text(p.shape);
      break;
    case DistributionKind::Empirical:
      {
        YAML::Node samples(YAML::NodeType::Sequence);
        for (double x : distribution.samples_s()) samples.push_back(seconds_text(x));
        node["samples"] = samples;
      }
      break;
  }
  return node;
}

YAML::Node arrival_to_yaml(const ArrivalSpec& spec) {
  YAML::Node node;
  node["model"] = std::string(arrival_model_name(spec.model));
  if (spec.model == ArrivalModel::Explicit) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (double t : spec.arrival_s) list.push_back(seconds_text(t));
    node["arrival"] = list;
  }
  if (spec.model == ArrivalModel::Stragglers) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& s : spec.stragglers) {
      YAML::Node entry;
      entry["rank"] = s.rank;
      entry["delay"] = distribution_to_yaml(s.delay);
      list.push_back(entry);
    }
    node["stragglers"] = list;
    node["persistence"] = number_text(spec.persistence);
    node["persistence_mode"] = std::string(persistence_mode_name(spec.persistence_mode));
  }
  if (spec.model == ArrivalModel::Trace) {
    node["file"] = spec.trace_file;
    if (spec.trace_iteration) node["iteration"] = *spec.trace_iteration;
    if (spec.trace_options.communicator) node["communicator"] = *spec.trace_options.communicator;
    if (spec.trace_options.skip_incomplete) node["skip_incomplete"] = true;
  }
  if (spec.jitter) node["jitter"] = distribution_to_yaml(*spec.jitter);
  return node;
}

}  // namespace collsim
