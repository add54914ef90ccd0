// Parsing of experiment specs (YAML) into ExperimentSpec; validation lives in spec_validate.cpp.
#include "collsim/experiments/spec.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <numeric>
#include <charconv>
#include <filesystem>
#include <span>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/formats/arrival_yaml.hpp"
#include "collsim/models/formats/model_file.hpp"
#include "collsim/models/formats/text_file.hpp"
#include "collsim/models/formats/yaml_reader.hpp"
#include "collsim/models/units.hpp"

namespace collsim {
namespace {

// Parse state: the source name for messages and the spec whose line table we fill.
class SpecReader {
 public:
  SpecReader(std::string_view source, std::filesystem::path base_dir, ExperimentSpec& spec)
      : source_(source), base_dir_(std::move(base_dir)), spec_(spec) {}

  [[noreturn]] void fail(const YAML::Node& node, std::string_view path, std::string_view problem) const {
    throw ConfigError(fmt::format("{}: {}", where(path, node), problem));
  }

  // "file: key.path (line N)": the prefix of every message about `node`.
  std::string where(std::string_view path, const YAML::Node& node) const {
    return fmt::format("{}: {}", source_, yaml_node_label(path, node));
  }

  void remember(const YAML::Node& node, const std::string& path) {
    if (node.Mark().line >= 0) spec_.lines[path] = node.Mark().line + 1;
  }

  const std::string& scalar(const YAML::Node& node, std::string_view path, std::string_view expected) const {
    if (!node.IsScalar()) fail(node, path, fmt::format("expected {}, got {}", expected, yaml_type_name(node)));
    return node.Scalar();
  }

  // A scalar, or a non-empty list of scalars (a sweep axis). Returns (node, path) per value.
  std::vector<std::pair<YAML::Node, std::string>> axis(const YAML::Node& node, const std::string& path,
                                                       std::string_view expected) {
    std::vector<std::pair<YAML::Node, std::string>> values;
    remember(node, path);
    if (node.IsSequence()) {
      if (node.size() == 0) fail(node, path, "empty list (a sweep axis needs at least one value)");
      for (std::size_t i = 0; i < node.size(); ++i) {
        const std::string item = fmt::format("{}[{}]", path, i);
        remember(node[i], item);
        scalar(node[i], item, expected);
        values.emplace_back(node[i], item);
      }
    } else {
      scalar(node, path, fmt::format("{} or a list of them", expected));
      values.emplace_back(node, path);
    }
    return values;
  }

  // Runs `parse` on the scalar text and prefixes its ConfigError with our location.
  template <typename Fn>
  auto convert(const YAML::Node& node, std::string_view path, Fn&& parse) const {
    try {
      return parse(node.Scalar());
    } catch (const ConfigError& e) {
      fail(node, path, e.what());
    }
  }

  std::uint64_t unsigned_integer(const YAML::Node& node, std::string_view path, std::string_view expected) const {
    const std::string& text = scalar(node, path, expected);
    std::uint64_t value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
      fail(node, path, fmt::format("'{}' is not {}", quote_excerpt(text), expected));
    }
    return value;
  }

  bool boolean(const YAML::Node& node, std::string_view path) const {
    const std::string& text = scalar(node, path, "true or false");
    if (text == "true") return true;
    if (text == "false") return false;
    fail(node, path, fmt::format("'{}' is not true or false", quote_excerpt(text)));
  }

  // Resolves a file named in the spec: absolute as is, relative against the spec's directory.
  std::string file_path(const std::string& text) const {
    const std::filesystem::path p(text);
    if (p.is_absolute() || base_dir_.empty()) return p.lexically_normal().string();
    return (base_dir_ / p).lexically_normal().string();
  }

  void parse(const YAML::Node& root);

 private:
  void parse_algorithms(const YAML::Node& node);
  void parse_n(const YAML::Node& node);
  void parse_link(const YAML::Node& node);
  void parse_arrivals(const YAML::Node* arrival, const YAML::Node* delays);
  void reject_unused_link(const YAML::Node& link) const;

  std::string source_;
  std::filesystem::path base_dir_;
  ExperimentSpec& spec_;
};

constexpr std::string_view kTopKeys[] = {"name",   "description", "algorithms",      "n",
                                         "sizes",  "topology",    "link",            "delays",
                                         "arrival", "start",      "engine",          "trials",
                                         "seed",   "pipeline_chunks", "skip_unsupported", "plot",
                                         "baseline", "collsim_version", "late_ranks", "agreement_cost",
                                         "execution", "launch", "gpus_per_thread", "reshare_interval"};

// Map entries in file order; unknown or repeated keys are errors.
YamlEntries entries_of(const SpecReader& reader, const YAML::Node& node, std::string_view path,
                       std::span<const std::string_view> known) {
  const YamlKeyRules rules = labelled_key_rules(
      [&reader](std::string_view key_path, const YAML::Node& at) { return reader.where(key_path, at); },
      [&reader](const YAML::Node& key, std::string_view map_path) {
        return reader.scalar(key, map_path.empty() ? "key" : map_path, "a key");
      });
  return checked_map_entries(node, path, known, rules);
}

void SpecReader::parse(const YAML::Node& root) {
  if (!root.IsMap()) fail(root, "spec", fmt::format("expected a map of keys (name, algorithms, n, ...), got {}", yaml_type_name(root)));
  const auto entries = entries_of(*this, root, "", kTopKeys);
  for (const auto& [key, node] : entries) remember(node, key);

  const YAML::Node* name = find_entry(entries, "name");
  if (!name) fail(root, "name", "missing key 'name' (the study's name, used for results/<name>/)");
  spec_.name = scalar(*name, "name", "a name");
  if (const YAML::Node* d = find_entry(entries, "description")) spec_.description = scalar(*d, "description", "text");

  const YAML::Node* algorithms = find_entry(entries, "algorithms");
  if (!algorithms) fail(root, "algorithms", "missing key 'algorithms' (a list of algorithm names, or 'all')");
  parse_algorithms(*algorithms);
  const YAML::Node* n = find_entry(entries, "n");
  if (!n) fail(root, "n", "missing key 'n' (the number of ranks, or a list of them)");
  parse_n(*n);

  if (const YAML::Node* sizes = find_entry(entries, "sizes")) {
    for (const auto& [node, path] : axis(*sizes, "sizes", "a size such as 1GiB")) {
      spec_.sizes_bytes.push_back(convert(node, path, [&](const std::string& t) { return parse_size_bytes(t, "size"); }));
    }
  } else {
    spec_.sizes_bytes = {1024.0 * 1024 * 1024};
  }
  if (const YAML::Node* topo = find_entry(entries, "topology")) {
    for (const auto& [node, path] : axis(*topo, "topology", "a topology name or file")) {
      const std::string& text = node.Scalar();
      const bool is_file = text.find('/') != std::string::npos || text.ends_with(".yaml") || text.ends_with(".yml");
      if (text.empty()) fail(node, path, "empty topology name");
      spec_.topologies.push_back(is_file ? TopologyChoice{std::filesystem::path(text).stem().string(), file_path(text)}
                                         : TopologyChoice{text, text});
    }
  } else {
    spec_.topologies = {{"nvswitch", "nvswitch"}};
  }
  if (const YAML::Node* link = find_entry(entries, "link")) {
    parse_link(*link);
    reject_unused_link(*link);
  }
  parse_arrivals(find_entry(entries, "arrival"), find_entry(entries, "delays"));

  if (const YAML::Node* start = find_entry(entries, "start")) {
    for (const auto& [node, path] : axis(*start, "start", "eager or barrier")) {
      spec_.starts.push_back(convert(node, path, [](const std::string& t) { return parse_start_mode(t, "start"); }));
    }
  } else {
    spec_.starts = {StartMode::Barrier};
  }
  if (const YAML::Node* engine = find_entry(entries, "engine")) {
    for (const auto& [node, path] : axis(*engine, "engine", "an engine name")) spec_.engines.push_back(node.Scalar());
  } else {
    spec_.engines = {"replay"};
  }
  if (const YAML::Node* trials = find_entry(entries, "trials")) {
    const auto value = unsigned_integer(*trials, "trials", "a positive integer");
    if (value < 1 || value > 100'000'000) fail(*trials, "trials", fmt::format("{} is not in 1..100000000", value));
    spec_.trials = static_cast<std::uint32_t>(value);
  } else {
    // A trace replays iteration t mod count in trial t: by default every iteration once. Traces
    // of different lengths compared in one study take the least common multiple of their counts,
    // so that each replays every one of its iterations equally often (with the longest count, a
    // 30-iteration trace beside a 50-iteration one ran its first 20 twice, biasing its mean); if
    // that multiple passes 4x the longest count, the longest count, and shorter traces wrap.
    std::uint64_t longest = 0, multiple = 1;
    for (const auto& a : spec_.arrivals) {
      if (!a.model.trace) continue;
      const std::uint64_t count = std::min<std::uint64_t>(a.model.trace->size(), 100'000'000);
      longest = std::max(longest, count);
      if (multiple <= 400'000'000) multiple = std::lcm(multiple, count);
    }
    if (longest > 0) spec_.trials = static_cast<std::uint32_t>(multiple <= 4 * longest ? multiple : longest);
  }
  if (const YAML::Node* seed = find_entry(entries, "seed")) {
    spec_.seed = unsigned_integer(*seed, "seed", "a non-negative 64-bit integer");
  }
  if (const YAML::Node* chunks = find_entry(entries, "pipeline_chunks")) {
    const auto value = unsigned_integer(*chunks, "pipeline_chunks", "a non-negative integer");
    if (value > 1'000'000) fail(*chunks, "pipeline_chunks", fmt::format("{} is too large", value));
    spec_.pipeline_chunks = static_cast<std::uint32_t>(value);
  }
  if (const YAML::Node* late = find_entry(entries, "late_ranks")) {
    const auto value = unsigned_integer(*late, "late_ranks", "a positive integer");
    if (value < 1 || value > 0xFFFF) fail(*late, "late_ranks", fmt::format("{} is not in 1..65535", value));
    spec_.late_ranks = static_cast<std::uint32_t>(value);
    // Only rows relabelled at run time read it; for them every n must leave one early rank.
    for (const std::string& algorithm : spec_.algorithms) {
      const AlgorithmInfo* info = find_algorithm_or_null(algorithm);
      if (info == nullptr || !info->relabel_at_run_time) continue;
      for (const Rank n_value : spec_.n) {
        if (value >= n_value) {
          fail(*late, "late_ranks", fmt::format("{} late ranks leave no early rank at n = {} ({})", value, n_value, algorithm));
        }
      }
    }
  }
  if (const YAML::Node* agreement = find_entry(entries, "agreement_cost")) {
    scalar(*agreement, "agreement_cost", "a duration such as 6us");
    spec_.agreement_s =
        convert(*agreement, "agreement_cost", [](const std::string& t) { return parse_duration_s(t, "agreement_cost"); });
  }
  // A key that no listed algorithm reads changes nothing: refused, as simulate refuses the flag
  // (late_ranks: 2 with [ring] ran, and its results looked like those of a setting).
  const auto read_by_some = [&](const char* key, const YAML::Node* node, bool (*reads)(const AlgorithmInfo&),
                                const char* who) {
    if (node == nullptr) return;
    const bool read = std::any_of(spec_.algorithms.begin(), spec_.algorithms.end(), [&](const std::string& a) {
      const AlgorithmInfo* info = find_algorithm_or_null(a);
      return info == nullptr || reads(*info);
    });
    if (!read) {
      fail(*node, key,
           fmt::format("{} = '{}' applies only to {}, and none is in 'algorithms'", key, quote_excerpt(node->Scalar()),
                       who));
    }
  };
  // The defaults (late_ranks 1, pipeline_chunks 0) are what config.resolved.yaml writes for every study.
  if (spec_.late_ranks != 1) {
    read_by_some(
        "late_ranks", find_entry(entries, "late_ranks"), [](const AlgorithmInfo& i) { return i.relabel_at_run_time; },
        "algorithms that pick the late ranks at run time (stragglar_online)");
  }
  read_by_some(
      "agreement_cost", find_entry(entries, "agreement_cost"),
      [](const AlgorithmInfo& i) { return i.relabel_at_run_time; },
      "algorithms that pick the late ranks at run time (stragglar_online)");
  if (spec_.pipeline_chunks != 0) {
    read_by_some(
        "pipeline_chunks", find_entry(entries, "pipeline_chunks"),
        [](const AlgorithmInfo& i) { return i.default_pipeline_chunks > 0 || i.chosen_per_run; },
        "pipelined algorithms (see 'collsim algorithms', column pipeline)");
  }
  if (const YAML::Node* interval = find_entry(entries, "reshare_interval")) {
    spec_.reshare_interval_s =
        parse_duration_s(scalar(*interval, "reshare_interval", "a duration such as 100ns (0: exact)"), where("reshare_interval", *interval));
  }
  if (const YAML::Node* execution = find_entry(entries, "execution")) {
    spec_.execution = parse_execution_style(scalar(*execution, "execution", "fused or p2p_rounds"), where("execution", *execution));
  }
  if (const YAML::Node* launch = find_entry(entries, "launch")) {
    spec_.launch_s = parse_duration_s(scalar(*launch, "launch", "a duration"), where("launch", *launch));
  }
  if (const YAML::Node* gpus = find_entry(entries, "gpus_per_thread")) {
    const auto value = unsigned_integer(*gpus, "gpus_per_thread", "a positive integer");
    if (value < 1 || value > 1024) fail(*gpus, "gpus_per_thread", fmt::format("{} is not in 1..1024", value));
    for (const Rank n_value : spec_.n) {
      if (value > n_value) fail(*gpus, "gpus_per_thread", fmt::format("{} is more than n = {}: one thread drives at most the run's GPUs", value, n_value));
    }
    if (!spec_.link_model) {
      fail(*gpus, "gpus_per_thread", "needs 'link: {model: FILE}': the launch per extra GPU comes from a calibrated model");
    }
    spec_.gpus_per_thread = static_cast<std::uint32_t>(value);
    try {
      spec_.link_model = std::make_shared<ModelFile>(driven_by_one_thread(*spec_.link_model, spec_.gpus_per_thread));
    } catch (const ConfigError& e) {
      fail(*gpus, "gpus_per_thread", e.what());
    }
  }
  if (const YAML::Node* skip = find_entry(entries, "skip_unsupported")) {
    spec_.skip_unsupported = boolean(*skip, "skip_unsupported");
  }
  if (const YAML::Node* baseline = find_entry(entries, "baseline")) {
    remember(*baseline, "baseline");
    const std::string algorithm = scalar(*baseline, "baseline", "an algorithm name");
    try {
      find_algorithm(algorithm);
    } catch (const ConfigError& e) {
      fail(*baseline, "baseline", e.what());
    }
    spec_.baseline = algorithm;
  }
  if (const YAML::Node* plot = find_entry(entries, "plot")) {
    for (const auto& [node, path] : axis(*plot, "plot", "a plot script path")) {
      // Empty, it resolved to the spec's directory and read as "does not exist".
      if (node.Scalar().empty()) fail(node, path, "is empty (give a Python script)");
      spec_.plots.push_back(file_path(node.Scalar()));
    }
  }
  if (const YAML::Node* version = find_entry(entries, "collsim_version")) scalar(*version, "collsim_version", "a version");
}

void SpecReader::parse_algorithms(const YAML::Node& node) {
  // `all`, alone or as an item (`[all, nvls, nccl]`): the algorithms that run on every topology.
  // Hierarchical ones run only on clusters and nvls only where the switch reduces, so `all` on
  // other studies would otherwise fail; a study on such a topology adds them by name. A row
  // chosen per run (`nccl`) repeats one of the others at every point, so a study names it too.
  std::vector<std::pair<std::string, int>> chosen;  // name, line of the item that brought it (-1: none)
  const auto listed = [&](std::string_view name) {
    return std::any_of(chosen.begin(), chosen.end(), [&](const auto& c) { return c.first == name; });
  };
  bool has_all = false;
  for (const auto& [value, path] : axis(node, "algorithms", "an algorithm name or 'all'")) {
    const int line = value.Mark().line >= 0 ? value.Mark().line + 1 : -1;
    if (value.Scalar() == "all") {
      if (has_all) fail(value, path, "'all' is listed twice");
      has_all = true;
      for (const auto& info : all_algorithms()) {
        if (info.hierarchical || info.needs_switch_reduction || info.chosen_per_run) continue;
        if (listed(info.name)) fail(value, path, fmt::format("'all' includes {}, which is listed before it", info.name));
        chosen.emplace_back(info.name, line);
      }
      continue;
    }
    try {
      find_algorithm(value.Scalar());
    } catch (const ConfigError& e) {
      fail(value, path, e.what());
    }
    if (listed(value.Scalar())) {
      fail(value, path, fmt::format("{} is listed twice in the sweep axis 'algorithms'{}", value.Scalar(),
                                    has_all ? " ('all' includes every algorithm that runs on every topology: "
                                              "every one but nvls, nccl and the hierarchical ones)"
                                            : ""));
    }
    chosen.emplace_back(value.Scalar(), line);
  }
  // Lines by position in the expanded list, where the errors about algorithms[i] look them up.
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) spec_.lines.erase(fmt::format("algorithms[{}]", i));
  }
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    spec_.algorithms.push_back(chosen[i].first);
    if (node.IsSequence() && chosen[i].second >= 0) spec_.lines[fmt::format("algorithms[{}]", i)] = chosen[i].second;
  }
}

void SpecReader::parse_n(const YAML::Node& node) {
  const auto add = [&](std::uint64_t value, const YAML::Node& where, const std::string& path) {
    if (value < 2) fail(where, path, fmt::format("n = {} is not supported (n must be at least 2)", value));
    if (value > (1u << 20)) fail(where, path, fmt::format("n = {} is too large (at most {})", value, 1u << 20));
    spec_.n.push_back(static_cast<Rank>(value));
  };
  if (node.IsScalar() && node.Scalar().find("..") != std::string::npos) {
    remember(node, "n");
    const std::string& text = node.Scalar();
    const auto dots = text.find("..");
    std::uint64_t lo = 0, hi = 0;
    const auto parse_part = [&](std::string_view part, std::uint64_t& out) {
      const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
      if (part.empty() || ec != std::errc() || ptr != part.data() + part.size()) {
        fail(node, "n", fmt::format("'{}' is not a range 'LO..HI' of integers", quote_excerpt(text)));
      }
    };
    parse_part(std::string_view(text).substr(0, dots), lo);
    parse_part(std::string_view(text).substr(dots + 2), hi);
    if (hi < lo) fail(node, "n", fmt::format("empty range '{}' (a sweep axis needs at least one value)", quote_excerpt(text)));
    if (hi - lo > 100'000) fail(node, "n", fmt::format("range '{}' is too long", quote_excerpt(text)));
    for (auto v = lo; v <= hi; ++v) add(v, node, "n");
    return;
  }
  for (const auto& [value, path] : axis(node, "n", "an integer >= 2")) {
    // Negative numbers get the range message rather than "not an integer".
    if (value.Scalar().starts_with('-')) fail(value, path, fmt::format("n = {} is not supported (n must be at least 2)", value.Scalar()));
    add(unsigned_integer(value, path, "an integer >= 2"), value, path);
  }
}

void SpecReader::parse_link(const YAML::Node& node) {
  if (!node.IsMap()) fail(node, "link", fmt::format("expected a map {{alpha, bandwidth, gamma}} or {{model: FILE}}, got {}", yaml_type_name(node)));
  static constexpr std::string_view kLinkKeys[] = {"alpha", "bandwidth", "gamma", "model"};
  const auto entries = entries_of(*this, node, "link", kLinkKeys);
  for (const auto& [key, value] : entries) remember(value, "link." + key);
  const YAML::Node* model = find_entry(entries, "model");
  if (model && entries.size() > 1) {
    fail(node, "link", "give either 'model: FILE' or alpha/bandwidth/gamma, not both (the model file sets them)");
  }
  if (model) {
    spec_.link_model_file = file_path(scalar(*model, "link.model", "a file name"));
    try {
      auto file = std::make_shared<ModelFile>(read_model_file(spec_.link_model_file));
      spec_.link = file->link;
      spec_.link_model = std::move(file);
    } catch (const ConfigError& e) {
      fail(*model, "link.model", e.what());
    }
    return;
  }
  if (const YAML::Node* alpha = find_entry(entries, "alpha")) {
    scalar(*alpha, "link.alpha", "a duration such as 3us");
    spec_.link.latency_s = convert(*alpha, "link.alpha", [](const std::string& t) { return parse_duration_s(t, "alpha"); });
  }
  if (const YAML::Node* bw = find_entry(entries, "bandwidth")) {
    scalar(*bw, "link.bandwidth", "a bandwidth such as 450GiBps");
    spec_.link.bandwidth_Bps = convert(*bw, "link.bandwidth", [](const std::string& t) { return parse_bandwidth_Bps(t, "bandwidth"); });
  }
  if (const YAML::Node* gamma = find_entry(entries, "gamma")) {
    scalar(*gamma, "link.gamma", "seconds per byte");
    spec_.link.gamma_s_per_byte = convert(*gamma, "link.gamma", [](const std::string& t) { return parse_s_per_byte(t, "gamma"); });
  }
}

// Topology files carry their own link numbers: link alpha/bandwidth/gamma would be ignored for
// them (and still recorded in config.resolved.yaml), so the pair is an error naming both.
void SpecReader::reject_unused_link(const YAML::Node& link) const {
  if (link["model"]) return;  // a model file sets every link class of any topology
  for (std::size_t i = 0; i < spec_.topologies.size(); ++i) {
    if (topology_uses_link(spec_.topologies[i].spec)) continue;
    const std::string path = spec_.topologies.size() == 1 ? "topology" : fmt::format("topology[{}]", i);
    const auto line = spec_.lines.find(path);
    fail(link, "link",
         fmt::format("alpha/bandwidth/gamma apply only to the nvswitch and full_mesh topologies, but {}{} = '{}' "
                     "sets its own links (remove 'link', or use link: {{model: FILE}})",
                     path, line == spec_.lines.end() ? std::string() : fmt::format(" (line {})", line->second),
                     spec_.topologies[i].label));
  }
}

void SpecReader::parse_arrivals(const YAML::Node* arrival, const YAML::Node* delays) {
  std::vector<double> delay_values;
  if (delays) {
    for (const auto& [node, path] : axis(*delays, "delays", "a duration such as 5ms")) {
      delay_values.push_back(convert(node, path, [](const std::string& t) { return parse_duration_s(t, "delay"); }));
    }
  }
  if (!arrival) {
    if (delay_values.empty()) delay_values = {0.0};
    for (double d : delay_values) {
      ArrivalChoice choice;
      choice.label = "fixed_delay";
      choice.delay_s = d;
      choice.last_rank_straggler = true;
      spec_.arrivals.push_back(std::move(choice));
    }
    return;
  }
  // Each arrival model: a map in the arrival_yaml.hpp format plus our optional `label`.
  std::vector<std::pair<YAML::Node, std::string>> models;
  if (arrival->IsSequence()) {
    if (arrival->size() == 0) fail(*arrival, "arrival", "empty list (a sweep axis needs at least one value)");
    for (std::size_t i = 0; i < arrival->size(); ++i) models.emplace_back((*arrival)[i], fmt::format("arrival[{}]", i));
  } else {
    models.emplace_back(*arrival, "arrival");
  }
  std::vector<ArrivalChoice> parsed;
  for (auto& [node, path] : models) {
    remember(node, path);
    if (!node.IsMap()) fail(node, path, fmt::format("expected an arrival model map {{model: ..., ...}}, got {}", yaml_type_name(node)));
    ArrivalChoice choice;
    if (const YAML::Node label = yaml_child(node, "label")) {
      choice.label = scalar(label, path + ".label", "a label");
      node.remove("label");
      // remove() drops the first 'label' only: a second one was then reported as an unknown key.
      if (const YAML::Node again = yaml_child(node, "label")) fail(again, path + ".label", "key 'label' is given twice");
      // The label is a CSV field and a plot legend: a newline split a row in readers that do
      // not honour quotes, and an escape sequence reached the terminal through the summary.
      if (holds_control_character(choice.label)) {
        fail(
            label, path + ".label",
            fmt::format("label '{}' holds a control character (a newline, tab or escape); it names rows of results.csv "
                        "and summary.csv: use one line of printable text",
                        quote_excerpt(choice.label)));
      }
    }
    try {
      choice.model = parse_arrival_yaml(node, path, std::nullopt, base_dir_);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: {}", source_, e.what()));
    }
    if (choice.label.empty()) {
      choice.label = choice.model.describe();
      // The default label names a trace or distribution file by its path, which may hold a newline.
      if (holds_control_character(choice.label)) {
        fail(node, path,
             fmt::format("the default label '{}' of this arrival model holds a control character (from a file "
                         "name); give it a 'label:' of one line of printable text (it names rows of results.csv "
                         "and summary.csv)",
                         quote_excerpt(choice.label)));
      }
    }
    // The label is the arrival column of results.csv and summary.csv: two models under one label
    // gave rows that nothing told apart.
    for (std::size_t j = 0; j < parsed.size(); ++j) {
      if (parsed[j].label != choice.label) continue;
      const auto first = spec_.lines.find(models[j].second);
      fail(node, path + ".label",
           fmt::format("label '{}' is also the label of {}{}: each arrival model needs its own label (it names the "
                       "rows of results.csv and summary.csv)",
                       quote_excerpt(choice.label), models[j].second,
                       first == spec_.lines.end() ? std::string() : fmt::format(" (line {})", first->second)));
    }
    parsed.push_back(std::move(choice));
  }
  if (delay_values.empty()) {
    spec_.arrivals = std::move(parsed);
    return;
  }
  // `delays` crossed with the arrival models: the delays replace every straggler's delay.
  spec_.crossed_delays_s = delay_values;
  for (std::size_t i = 0; i < parsed.size(); ++i) {
    if (parsed[i].model.model != ArrivalModel::Stragglers) {
      fail(models[i].first, models[i].second,
           fmt::format("'delays' replaces straggler delays, but this arrival model is '{}' (use model: stragglers, or drop 'delays')",
                       arrival_model_name(parsed[i].model.model)));
    }
    for (double d : delay_values) {
      ArrivalChoice choice = parsed[i];
      choice.delay_s = d;
      for (auto& s : choice.model.stragglers) s.delay = DelayDistribution::constant(d, "delays");
      spec_.arrivals.push_back(std::move(choice));
    }
  }
}

}  // namespace

std::string ExperimentSpec::where(std::string_view key_path) const {
  const auto it = lines.find(key_path);
  if (it == lines.end()) return source.empty() ? std::string() : fmt::format("{}: {}: ", source, key_path);
  return fmt::format("{}: {} (line {}): ", source, key_path, it->second);
}

ExperimentSpec parse_spec(std::string_view yaml_text, std::string_view source, const std::filesystem::path& base_dir) {
  ExperimentSpec spec;
  spec.source = std::string(source);
  YAML::Node root;
  try {
    root = only_document(load_yaml_documents(std::string(yaml_text)), source, [&](std::size_t line) {
      return fmt::format("{}: a second YAML document starts near line {} (after '---'); a spec is one document "
                         "(write a second spec file for a second study)",
                         source, line);
    });
  } catch (const YAML::ParserException& e) {
    throw ConfigError(fmt::format("{}: YAML syntax error at line {}, column {}: {}", source, e.mark.line + 1,
                                  e.mark.column + 1, yaml_parse_problem(e)));
  }
  if (!root || root.IsNull()) throw ConfigError(fmt::format("{}: the spec is empty (expected name, algorithms, n, ...)", source));
  // Before any key is looked up: an unclosed quote swallows the keys after it, which were then
  // reported missing.
  static constexpr std::string_view kFreeText[] = {"description"};
  if (const auto multiline = find_multiline_value(root, yaml_text, kFreeText)) {
    throw ConfigError(fmt::format("{}: {}: {}", source, yaml_node_label(multiline->path, multiline->node), multiline->problem));
  }
  SpecReader reader(source, base_dir, spec);
  reader.parse(root);
  return spec;
}

ExperimentSpec load_spec(const std::filesystem::path& file, bool check_plot_scripts) {
  const std::string text = read_text_file(file, "experiment spec", kConfigFileMaxBytes);
  const std::filesystem::path dir = std::filesystem::absolute(file).parent_path();
  ExperimentSpec spec = parse_spec(text, file.string(), dir);
  validate(spec, check_plot_scripts);
  return spec;
}

LinkModel link_at(const ExperimentSpec& spec, double size_bytes) {
  return spec.link_model ? spec.link_model->link_for_size(size_bytes) : spec.link;
}

ExecutionCosts execution_at(const ExperimentSpec& spec, double size_bytes) {
  ExecutionCosts costs = spec.link_model ? spec.link_model->execution_for_size(size_bytes) : ExecutionCosts{};
  if (spec.execution) costs.style = *spec.execution;
  if (spec.launch_s) costs.launch_s = *spec.launch_s;
  return costs;
}

Topology topology_at(const ExperimentSpec& spec, std::size_t index, Rank n, double size_bytes) {
  Topology topology = resolve_topology(spec.topologies.at(index).spec, n, link_at(spec, size_bytes));
  if (spec.link_model) apply_model(*spec.link_model, size_bytes, topology);
  return topology;
}

NConstraintContext node_context_at(const ExperimentSpec& spec, std::size_t index, Rank n) {
  // The node size and switch capability do not depend on the buffer size, only the link parameters do.
  return topology_context(topology_at(spec, index, n, spec.sizes_bytes.front()));
}

ArrivalSpec arrival_for(const ArrivalChoice& choice, Rank n) {
  if (!choice.last_rank_straggler) return choice.model;
  ArrivalSpec spec;
  spec.model = ArrivalModel::Stragglers;
  spec.stragglers.push_back({n - 1, DelayDistribution::constant(choice.delay_s.value_or(0.0), "delays")});
  return spec;
}

}  // namespace collsim
