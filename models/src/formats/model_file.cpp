#include "collsim/models/formats/model_file.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <initializer_list>

#include "collsim/models/error.hpp"
#include "collsim/models/formats/atomic_file.hpp"
#include "collsim/models/formats/text_file.hpp"
#include "collsim/models/formats/yaml_reader.hpp"
#include "collsim/models/units.hpp"

namespace collsim {
namespace {

constexpr std::string_view kFormat = "collsim-link-model";
constexpr int kVersion = 2;
constexpr int kOldestVersion = 1;  // link + regimes, no execution or terms

// Double-quoted YAML string; file names may hold anything.
std::string yaml_quoted(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// fmt's shortest representation round-trips exactly through from_chars.
std::string num(double value) { return fmt::format("{}", value); }

// The ranges of the command-line units (units.hpp): a model file is read as the flags would be.
void check_link(const LinkModel& link, std::string_view where) {
  if (!(link.latency_s >= 0 && link.latency_s <= kMaxDuration_s)) {
    throw ConfigError(fmt::format("{}: latency_s = {} must be in 0..{:g} s", where, link.latency_s, kMaxDuration_s));
  }
  if (!(link.bandwidth_Bps >= kMinBandwidth_Bps && link.bandwidth_Bps <= kMaxBandwidth_Bps)) {
    throw ConfigError(fmt::format("{}: bandwidth_Bps = {} must be in {:g}..{:g} (1 KB/s to 1 PB/s)", where,
                                  link.bandwidth_Bps, kMinBandwidth_Bps, kMaxBandwidth_Bps));
  }
  if (!(link.gamma_s_per_byte >= 0 && link.gamma_s_per_byte <= kMaxGamma_s_per_byte)) {
    throw ConfigError(fmt::format("{}: gamma_s_per_byte = {} must be in 0..{:g}", where, link.gamma_s_per_byte,
                                  kMaxGamma_s_per_byte));
  }
}

void check_regimes(const std::vector<FittedRegime>& regimes, std::string_view where) {
  for (std::size_t k = 0; k < regimes.size(); ++k) {
    const auto& r = regimes[k];
    check_link(r.link, fmt::format("{}[{}]", where, k));
    if (!(r.min_size_bytes >= 0 && r.min_size_bytes <= r.max_size_bytes && std::isfinite(r.max_size_bytes))) {
      throw ConfigError(fmt::format("{}[{}]: size range {}..{} must satisfy 0 <= min_size_bytes <= max_size_bytes",
                                    where, k, r.min_size_bytes, r.max_size_bytes));
    }
    if (k > 0 && !(regimes[k - 1].max_size_bytes < r.min_size_bytes)) {
      throw ConfigError(fmt::format("{}[{}]: min_size_bytes {} must be above the previous regime's max_size_bytes {} "
                                    "(regimes are ascending, non-overlapping size ranges)",
                                    where, k, r.min_size_bytes, regimes[k - 1].max_size_bytes));
    }
    for (std::size_t j = 0; j < k; ++j) {
      if (regimes[j].protocol == r.protocol) {
        throw ConfigError(fmt::format("{}[{}]: protocol {} is also {}[{}]'s: each protocol has one regime", where, k,
                                      protocol_name(r.protocol), where, j));
      }
    }
  }
}

void check_link_classes(const ModelFile& model) {
  if (model.link_classes.empty()) {
    if (!model.unidentified_classes.empty()) {
      throw ConfigError("unidentified_classes: only a model with link_classes lists unidentified classes");
    }
    return;
  }
  if (!model.regimes.empty()) {
    throw ConfigError("regimes: a model with link_classes has no size regimes (they are single-class)");
  }
  for (std::size_t k = 0; k < model.link_classes.size(); ++k) {
    const auto& c = model.link_classes[k];
    if (c.name.empty()) throw ConfigError(fmt::format("link_classes[{}]: empty class name", k));
    check_link(LinkModel{c.latency_s, c.bandwidth_Bps, 0.0}, fmt::format("link_classes.{}", c.name));
    for (std::size_t j = 0; j < k; ++j) {
      if (model.link_classes[j].name == c.name) throw ConfigError(fmt::format("link_classes: class '{}' twice", c.name));
    }
    for (const auto& u : model.unidentified_classes) {
      if (u == c.name) {
        throw ConfigError(fmt::format("unidentified_classes: '{}' also has fitted parameters in link_classes", u));
      }
    }
  }
}

std::string link_fields(const LinkModel& link) {
  return fmt::format("latency_s: {}, bandwidth_Bps: {}, gamma_s_per_byte: {}", num(link.latency_s),
                     num(link.bandwidth_Bps), num(link.gamma_s_per_byte));
}

// Reads a yaml-cpp tree with every error naming source, line and key path.
class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  std::size_t line(const YAML::Node& node) const {
    const int l = node.Mark().line;
    return l >= 0 ? static_cast<std::size_t>(l) + 1 : 1;
  }

  /// "source:line: 'path'", the subject of a value parser's message.
  std::string what(const YAML::Node& at, std::string_view path) const {
    return fmt::format("{}:{}: '{}'", source_, line(at), path);
  }

  [[noreturn]] void fail(const YAML::Node& at, const std::string& message) const {
    throw ConfigError(fmt::format("{}:{}: {}", source_, line(at), message));
  }

  void expect_map(const YAML::Node& node, std::string_view path) const {
    if (!node.IsMap()) fail(node, fmt::format("'{}' must be a mapping", path));
  }

  void check_keys(const YAML::Node& node, std::string_view path, std::initializer_list<std::string_view> known) const {
    expect_map(node, path);
    YamlKeyRules rules;
    rules.key_text = [this](const YAML::Node& key, std::string_view map_path) {
      if (!key.IsScalar()) {
        fail(key, fmt::format("a key of '{}' is {}; keys are plain names", map_path.empty() ? "<top>" : map_path,
                              yaml_type_name(key)));
      }
      return key.Scalar();
    };
    rules.unknown_key = [this](const YAML::Node& key_node, std::string_view map_path, std::string_view key,
                               std::string_view known_list) {
      return fmt::format("{}:{}: unknown key '{}' in '{}' (known: {})", source_, line(key_node), key,
                         map_path.empty() ? "<top>" : map_path, known_list);
    };
    // The lookups see only the first of a repeated key, so a second 'link' was ignored unseen.
    rules.repeated_key = [this](const YAML::Node& key_node, std::string_view key_path, std::string_view) {
      return fmt::format("{}:{}: key '{}' is given twice", source_, line(key_node), key_path);
    };
    checked_map_entries(node, path, std::span(known.begin(), known.size()), rules);
  }

  YAML::Node require(const YAML::Node& node, std::string_view key, std::string_view path) const {
    const YAML::Node child = yaml_child(node, key);
    if (!child) fail(node, fmt::format("'{}' has no key '{}'", path.empty() ? "<top>" : path, key));
    return child;
  }

  std::string scalar(const YAML::Node& node, std::string_view path) const {
    if (!node.IsScalar()) fail(node, fmt::format("'{}' must be a scalar", path));
    return node.Scalar();
  }

  double number(const YAML::Node& node, std::string_view path) const {
    const std::string s = scalar(node, path);
    double value = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(value)) {
      fail(node, fmt::format("'{}' = '{}' is not a finite number", path, s));
    }
    return value;
  }

  double non_negative(const YAML::Node& node, std::string_view path) const {
    const double v = number(node, path);
    if (v < 0) fail(node, fmt::format("'{}' = {} must not be negative", path, v));
    return v;
  }

  std::uint64_t unsigned_integer(const YAML::Node& node, std::string_view path) const {
    const std::string s = scalar(node, path);
    std::uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) {
      fail(node, fmt::format("'{}' = '{}' is not a non-negative integer", path, s));
    }
    return value;
  }

  // A count held in 32 bits: a larger value is refused, not cut to its low bits.
  std::uint32_t u32(const YAML::Node& node, std::string_view path) const {
    const std::uint64_t value = unsigned_integer(node, path);
    if (value > 0xFFFFFFFFull) fail(node, fmt::format("'{}' = {} is too large (at most 4294967295)", path, value));
    return static_cast<std::uint32_t>(value);
  }

  bool boolean(const YAML::Node& node, std::string_view path) const {
    const std::string s = scalar(node, path);
    if (s == "true") return true;
    if (s == "false") return false;
    fail(node, fmt::format("'{}' = '{}' must be true or false", path, s));
  }

  // Link values accept human units ("3us", "450GBps") as well as plain SI numbers.
  LinkModel link(const YAML::Node& node, std::string_view path) const {
    LinkModel link;
    const auto what = [&](const YAML::Node& at, std::string_view key) {
      return fmt::format("{}:{}: '{}.{}'", source_, line(at), path, key);
    };
    const YAML::Node latency = require(node, "latency_s", path);
    link.latency_s = parse_duration_s(scalar(latency, fmt::format("{}.latency_s", path)), what(latency, "latency_s"),
                                      BareNumber::BaseUnit);
    const YAML::Node bandwidth = require(node, "bandwidth_Bps", path);
    link.bandwidth_Bps =
        parse_bandwidth_Bps(scalar(bandwidth, fmt::format("{}.bandwidth_Bps", path)), what(bandwidth, "bandwidth_Bps"),
                            BareNumber::BaseUnit);
    if (const YAML::Node gamma = yaml_child(node, "gamma_s_per_byte")) {
      link.gamma_s_per_byte = non_negative(gamma, fmt::format("{}.gamma_s_per_byte", path));
      if (link.gamma_s_per_byte > kMaxGamma_s_per_byte) {
        fail(gamma, fmt::format("'{}.gamma_s_per_byte' = {} must be in 0..{:g} (a reduction slower than 1 KB/s)", path,
                                link.gamma_s_per_byte, kMaxGamma_s_per_byte));
      }
    }
    return link;
  }

  std::vector<std::string> string_list(const YAML::Node& node, std::string_view path) const {
    if (!node.IsSequence()) fail(node, fmt::format("'{}' must be a list", path));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < node.size(); ++i) out.push_back(scalar(node[i], fmt::format("{}[{}]", path, i)));
    return out;
  }

 private:
  std::string_view source_;
};

Protocol read_protocol(const Reader& r, const YAML::Node& node, const std::string& path) {
  const std::string text = r.scalar(node, path);
  for (const Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
    if (text == protocol_name(p)) return p;
  }
  r.fail(node, fmt::format("'{}' = '{}' is not a protocol (known: LL, LL128, Simple)", path, text));
}

FittedRegime read_regime(const Reader& r, const YAML::Node& node, const std::string& path, int version) {
  if (version >= 2) {
    r.check_keys(node, path,
                 {"protocol", "min_size_bytes", "max_size_bytes", "latency_s", "bandwidth_Bps", "gamma_s_per_byte",
                  "launch_s", "rows", "gamma_fitted", "latency_fitted", "launch_fitted", "launch_per_extra_gpu_s",
                  "launch_per_extra_gpu_fitted"});
  } else {
    r.check_keys(node, path,
                 {"min_size_bytes", "max_size_bytes", "latency_s", "bandwidth_Bps", "gamma_s_per_byte", "rows",
                  "gamma_fitted"});
  }
  FittedRegime regime;
  if (const YAML::Node v = yaml_child(node, "protocol")) regime.protocol = read_protocol(r, v, path + ".protocol");
  if (const YAML::Node v = yaml_child(node, "launch_s")) {
    regime.launch_s = parse_duration_s(r.scalar(v, path + ".launch_s"), r.what(v, path + ".launch_s"), BareNumber::BaseUnit);
  }
  if (const YAML::Node v = yaml_child(node, "latency_fitted")) regime.latency_fitted = r.boolean(v, path + ".latency_fitted");
  if (const YAML::Node v = yaml_child(node, "launch_fitted")) regime.launch_fitted = r.boolean(v, path + ".launch_fitted");
  // Absent from files written before the term existed: 0, as those fits charged no such launch.
  if (const YAML::Node v = yaml_child(node, "launch_per_extra_gpu_s")) {
    regime.launch_per_extra_gpu_s = parse_duration_s(r.scalar(v, path + ".launch_per_extra_gpu_s"),
                                                     r.what(v, path + ".launch_per_extra_gpu_s"), BareNumber::BaseUnit);
  }
  if (const YAML::Node v = yaml_child(node, "launch_per_extra_gpu_fitted")) {
    regime.launch_per_extra_gpu_fitted = r.boolean(v, path + ".launch_per_extra_gpu_fitted");
  }
  regime.link = r.link(node, path);
  regime.min_size_bytes = r.non_negative(r.require(node, "min_size_bytes", path), path + ".min_size_bytes");
  regime.max_size_bytes = r.non_negative(r.require(node, "max_size_bytes", path), path + ".max_size_bytes");
  if (const YAML::Node rows = yaml_child(node, "rows")) regime.rows = r.unsigned_integer(rows, path + ".rows");
  if (const YAML::Node g = yaml_child(node, "gamma_fitted")) regime.gamma_fitted = r.boolean(g, path + ".gamma_fitted");
  // Sizes are whole bytes, as everywhere else (min_size_bytes: 1.5 was taken as it was).
  for (const auto& [bytes, key] :
       {std::pair{regime.min_size_bytes, "min_size_bytes"}, std::pair{regime.max_size_bytes, "max_size_bytes"}}) {
    if (bytes != std::floor(bytes))
      r.fail(yaml_child(node, key), fmt::format("'{}.{}' = {} is not a whole number of bytes", path, key, bytes));
  }
  if (regime.max_size_bytes < regime.min_size_bytes) {
    r.fail(node, fmt::format("'{}': max_size_bytes {} is below min_size_bytes {}", path, regime.max_size_bytes,
                             regime.min_size_bytes));
  }
  return regime;
}

ModelProvenance read_provenance(const Reader& r, const YAML::Node& node) {
  r.check_keys(node, "provenance",
               {"tool", "command", "algorithm", "topology", "method", "time_column", "fit_on", "sources"});
  ModelProvenance p;
  if (const YAML::Node v = yaml_child(node, "tool")) p.tool = r.scalar(v, "provenance.tool");
  if (const YAML::Node v = yaml_child(node, "command")) p.command = r.scalar(v, "provenance.command");
  if (const YAML::Node v = yaml_child(node, "algorithm")) p.algorithm = r.scalar(v, "provenance.algorithm");
  if (const YAML::Node v = yaml_child(node, "topology")) p.topology = r.scalar(v, "provenance.topology");
  if (const YAML::Node v = yaml_child(node, "method")) p.method = r.scalar(v, "provenance.method");
  if (const YAML::Node v = yaml_child(node, "time_column")) p.time_column = r.scalar(v, "provenance.time_column");
  if (const YAML::Node v = yaml_child(node, "fit_on")) p.fit_on = r.string_list(v, "provenance.fit_on");
  if (const YAML::Node sources = yaml_child(node, "sources")) {
    if (!sources.IsSequence()) r.fail(sources, "'provenance.sources' must be a list");
    for (std::size_t i = 0; i < sources.size(); ++i) {
      const std::string path = fmt::format("provenance.sources[{}]", i);
      const YAML::Node s = sources[i];
      r.check_keys(s, path, {"file", "format", "collective", "n", "rows", "fnv1a64"});
      ModelSource src;
      src.file = r.scalar(r.require(s, "file", path), path + ".file");
      if (const YAML::Node v = yaml_child(s, "format")) src.format = r.scalar(v, path + ".format");
      if (const YAML::Node v = yaml_child(s, "collective")) src.collective = r.scalar(v, path + ".collective");
      if (const YAML::Node v = yaml_child(s, "n")) src.n = r.u32(v, path + ".n");
      if (const YAML::Node v = yaml_child(s, "rows")) src.rows = r.unsigned_integer(v, path + ".rows");
      if (const YAML::Node v = yaml_child(s, "fnv1a64")) src.fnv1a64 = r.scalar(v, path + ".fnv1a64");
      p.sources.push_back(std::move(src));
    }
  }
  return p;
}

void read_fit(const Reader& r, const YAML::Node& node, ModelFile& model) {
  r.check_keys(node, "fit", {"median_abs_rel_error", "max_abs_rel_error", "rows"});
  if (const YAML::Node v = yaml_child(node, "median_abs_rel_error")) model.median_abs_rel_error = r.non_negative(v, "fit.median_abs_rel_error");
  if (const YAML::Node v = yaml_child(node, "max_abs_rel_error")) model.max_abs_rel_error = r.non_negative(v, "fit.max_abs_rel_error");
  const YAML::Node rows = yaml_child(node, "rows");
  if (!rows) return;
  if (!rows.IsSequence()) r.fail(rows, "'fit.rows' must be a list");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string path = fmt::format("fit.rows[{}]", i);
    const YAML::Node row = rows[i];
    r.check_keys(row, path,
                 {"source", "collective", "algorithm", "n", "size_bytes", "measured_s", "predicted_s", "rel_error",
                  "role", "regime"});
    ModelFitRow out;
    out.source = r.scalar(r.require(row, "source", path), path + ".source");
    out.collective = r.scalar(r.require(row, "collective", path), path + ".collective");
    out.algorithm = r.scalar(r.require(row, "algorithm", path), path + ".algorithm");
    out.n = r.u32(r.require(row, "n", path), path + ".n");
    out.size_bytes = r.non_negative(r.require(row, "size_bytes", path), path + ".size_bytes");
    out.measured_s = r.non_negative(r.require(row, "measured_s", path), path + ".measured_s");
    out.predicted_s = r.non_negative(r.require(row, "predicted_s", path), path + ".predicted_s");
    out.rel_error = r.number(r.require(row, "rel_error", path), path + ".rel_error");
    out.role = r.scalar(r.require(row, "role", path), path + ".role");
    if (out.role != "fit" && out.role != "predict") {
      r.fail(yaml_child(row, "role"), fmt::format("'{}.role' = '{}' must be fit or predict", path, out.role));
    }
    if (const YAML::Node v = yaml_child(row, "regime")) out.regime = r.u32(v, path + ".regime");
    model.fit_rows.push_back(std::move(out));
  }
}

// `link` (single-class) or `link_classes` + `gamma_s_per_byte` (multi-class), never both.
void read_links(const Reader& r, const YAML::Node& root, ModelFile& model) {
  const YAML::Node link = yaml_child(root, "link");
  const YAML::Node classes = yaml_child(root, "link_classes");
  if (link && classes) r.fail(classes, "give either 'link' (one class) or 'link_classes', not both");
  if (!classes) {
    for (const char* key : {"gamma_s_per_byte", "unidentified_classes"}) {
      if (const YAML::Node v = root[key]) r.fail(v, fmt::format("'{}' belongs to a model with 'link_classes'", key));
    }
    r.require(root, "link", "");
    r.check_keys(link, "link", {"latency_s", "bandwidth_Bps", "gamma_s_per_byte"});
    model.link = r.link(link, "link");
    return;
  }
  if (!classes.IsMap() || classes.size() == 0) r.fail(classes, "'link_classes' must be a non-empty mapping of class names");
  for (const auto& entry : classes) {
    const std::string name = r.scalar(entry.first, "link_classes");
    const std::string path = "link_classes." + name;
    for (const auto& c : model.link_classes) {
      if (c.name == name) r.fail(entry.first, fmt::format("'{}' appears twice", path));
    }
    r.check_keys(entry.second, path, {"latency_s", "bandwidth_Bps"});
    const LinkModel values = r.link(entry.second, path);
    model.link_classes.push_back({name, values.latency_s, values.bandwidth_Bps, r.line(entry.first)});
  }
  model.link = LinkModel{model.link_classes.front().latency_s, model.link_classes.front().bandwidth_Bps, 0.0};
  if (const YAML::Node gamma = yaml_child(root, "gamma_s_per_byte")) {
    model.link.gamma_s_per_byte = r.non_negative(gamma, "gamma_s_per_byte");
    if (model.link.gamma_s_per_byte > kMaxGamma_s_per_byte) {
      r.fail(gamma, fmt::format("'gamma_s_per_byte' = {} must be in 0..{:g} (a reduction slower than 1 KB/s)",
                                model.link.gamma_s_per_byte, kMaxGamma_s_per_byte));
    }
  }
  if (const YAML::Node list = yaml_child(root, "unidentified_classes")) {
    model.unidentified_classes = r.string_list(list, "unidentified_classes");
    for (const auto& u : model.unidentified_classes) {
      for (const auto& c : model.link_classes) {
        if (c.name == u) {
          r.fail(list, fmt::format("'unidentified_classes' lists '{}', which has parameters in link_classes (line {})",
                                   u, c.line));
        }
      }
    }
  }
  if (const YAML::Node regimes = yaml_child(root, "regimes")) {
    r.fail(regimes, "'regimes' apply to single-class models ('link'), not to 'link_classes'");
  }
}

void read_execution(const Reader& r, const YAML::Node& node, ModelFile& model) {
  r.check_keys(node, "execution", {"style", "launch_s"});
  model.has_execution = true;
  if (const YAML::Node v = yaml_child(node, "style")) {
    model.execution.style = parse_execution_style(r.scalar(v, "execution.style"), r.what(v, "execution.style"));
  }
  if (const YAML::Node v = yaml_child(node, "launch_s")) {
    model.execution.launch_s = parse_duration_s(r.scalar(v, "execution.launch_s"), r.what(v, "execution.launch_s"),
                                                BareNumber::BaseUnit);
  }
}

void read_terms(const Reader& r, const YAML::Node& node, ModelFile& model) {
  r.check_keys(node, "terms", {"launch_s", "launch_per_extra_gpu_s", "latency_s", "bandwidth_Bps", "gamma_s_per_byte"});
  for (const auto& entry : node) {
    const std::string name = r.scalar(entry.first, "terms");
    const std::string path = "terms." + name;
    r.check_keys(entry.second, path, {"origin", "source"});
    ModelTerm term;
    term.name = name;
    term.origin = r.scalar(r.require(entry.second, "origin", path), path + ".origin");
    if (term.origin != "fitted" && term.origin != "prior") {
      r.fail(yaml_child(entry.second, "origin"), fmt::format("'{}.origin' = '{}' must be fitted or prior", path, term.origin));
    }
    if (const YAML::Node v = yaml_child(entry.second, "source")) term.source = r.scalar(v, path + ".source");
    if (term.origin == "prior" && term.source.empty()) {
      r.fail(entry.second, fmt::format("'{}': a prior names its source ('source')", path));
    }
    model.terms.push_back(std::move(term));
  }
}

std::size_t regime_index(const std::vector<FittedRegime>& regimes, double size_bytes) {
  for (std::size_t k = 0; k + 1 < regimes.size(); ++k) {
    const double boundary = std::sqrt(std::max(regimes[k].max_size_bytes, 1.0) * std::max(regimes[k + 1].min_size_bytes, 1.0));
    if (size_bytes < boundary) return k;
  }
  return regimes.size() - 1;
}

}  // namespace

LinkModel ModelFile::link_for_size(double size_bytes) const {
  if (regimes.empty()) return link;
  return regimes[regime_index(regimes, size_bytes)].link;
}

ExecutionCosts ModelFile::execution_for_size(double size_bytes) const {
  ExecutionCosts costs = execution;
  if (!regimes.empty()) {
    const FittedRegime& r = regimes[regime_index(regimes, size_bytes)];
    if (r.launch_fitted || r.launch_s > 0) costs.launch_s = r.launch_s;
  }
  return costs;
}

ModelFile driven_by_one_thread(const ModelFile& model, std::uint32_t gpus_per_thread) {
  if (gpus_per_thread == 0) throw ConfigError("gpus per thread: 0 must be at least 1");
  ModelFile out = model;
  if (gpus_per_thread == 1) return out;
  if (model.regimes.empty()) {
    throw ConfigError(fmt::format("model '{}' has no protocol regimes, so no launch per extra GPU a thread drives "
                                  "(launch_per_extra_gpu_s); recalibrate it with collsim calibrate, or give the whole "
                                  "launch with --launch",
                                  model.name));
  }
  const double extra = gpus_per_thread - 1.0;
  for (FittedRegime& r : out.regimes) {
    // A regime without a launch of its own takes the execution default, adjusted below.
    if (r.launch_fitted || r.launch_s > 0) r.launch_s += extra * r.launch_per_extra_gpu_s;
  }
  out.execution.launch_s += extra * model.regimes.front().launch_per_extra_gpu_s;
  return out;
}

std::string model_file_to_yaml(const ModelFile& model) {
  check_link(model.link, "link");
  check_regimes(model.regimes, "regimes");
  check_link_classes(model);
  std::string out;
  out += "# collsim link model. Written by `collsim calibrate`; regenerate rather than edit.\n";
  out += "# Units are SI: seconds, bytes, bytes per second. `link` is the single alpha-beta(-gamma) fit;\n";
  out += "# `regimes` (if any) is the protocol-aware model: a collective's time is the minimum over them.\n";
  if (!(std::isfinite(model.execution.launch_s) && model.execution.launch_s >= 0)) {
    throw ConfigError(fmt::format("execution.launch_s = {} must be finite and >= 0", model.execution.launch_s));
  }
  out += fmt::format("format: {}\nversion: {}\nname: {}\n", kFormat, kVersion, yaml_quoted(model.name));
  if (model.has_execution) {
    out += "# execution: defaults of runs with this model (--execution/--launch and spec keys override them).\n";
    out += fmt::format("execution: {{style: {}, launch_s: {}}}\n", execution_style_name(model.execution.style),
                       num(model.execution.launch_s));
  }
  if (!model.terms.empty()) {
    out += "# terms: whether each term was fitted to the data or is a prior (with its source).\n";
    out += "terms:\n";
    for (const auto& t : model.terms) {
      out += fmt::format("  {}: {{origin: {}{}}}\n", t.name, t.origin,
                         t.source.empty() ? std::string() : fmt::format(", source: {}", yaml_quoted(t.source)));
    }
  }
  if (model.link_classes.empty()) {
    out += fmt::format("link: {{{}}}\n", link_fields(model.link));
  } else {
    out += "# link_classes: alpha and bandwidth per link class of the calibration topology; gamma is shared.\n";
    out += "link_classes:\n";
    for (const auto& c : model.link_classes) {
      out += fmt::format("  {}: {{latency_s: {}, bandwidth_Bps: {}}}\n", yaml_quoted(c.name), num(c.latency_s),
                         num(c.bandwidth_Bps));
    }
    out += fmt::format("gamma_s_per_byte: {}\n", num(model.link.gamma_s_per_byte));
  }
  if (!model.unidentified_classes.empty()) {
    std::vector<std::string> names;
    for (const auto& c : model.unidentified_classes) names.push_back(yaml_quoted(c));
    out += fmt::format("unidentified_classes: [{}]\n", fmt::join(names, ", "));
  }
  if (!model.regimes.empty()) {
    out += "regimes:\n";
    for (const auto& r : model.regimes) {
      for (const double launch : {r.launch_s, r.launch_per_extra_gpu_s}) {
        if (!(std::isfinite(launch) && launch >= 0)) {
          throw ConfigError(fmt::format("regimes: a launch term = {} must be finite and >= 0", launch));
        }
      }
      out += fmt::format(
          "  - {{protocol: {}, min_size_bytes: {}, max_size_bytes: {}, {}, launch_s: {}, launch_per_extra_gpu_s: {}, "
          "rows: {}, gamma_fitted: {}, latency_fitted: {}, launch_fitted: {}, launch_per_extra_gpu_fitted: {}}}\n",
          protocol_name(r.protocol), num(r.min_size_bytes), num(r.max_size_bytes), link_fields(r.link), num(r.launch_s),
          num(r.launch_per_extra_gpu_s), r.rows, r.gamma_fitted, r.latency_fitted, r.launch_fitted,
          r.launch_per_extra_gpu_fitted);
    }
  }
  const auto& p = model.provenance;
  out += "provenance:\n";
  out += fmt::format("  tool: {}\n  command: {}\n  algorithm: {}\n", yaml_quoted(p.tool), yaml_quoted(p.command),
                     yaml_quoted(p.algorithm));
  if (!p.topology.empty()) out += fmt::format("  topology: {}\n", yaml_quoted(p.topology));
  out += fmt::format("  method: {}\n  time_column: {}\n", yaml_quoted(p.method), yaml_quoted(p.time_column));
  std::vector<std::string> fit_on;
  for (const auto& c : p.fit_on) fit_on.push_back(yaml_quoted(c));
  out += fmt::format("  fit_on: [{}]\n", fmt::join(fit_on, ", "));
  out += "  sources:\n";
  for (const auto& s : p.sources) {
    out += fmt::format("    - {{file: {}, format: {}, collective: {}, n: {}, rows: {}, fnv1a64: {}}}\n", yaml_quoted(s.file),
                       yaml_quoted(s.format), yaml_quoted(s.collective), s.n, s.rows, yaml_quoted(s.fnv1a64));
  }
  if (p.sources.empty()) out.replace(out.size() - std::string_view("  sources:\n").size(), std::string::npos, "  sources: []\n");
  out += "fit:\n";
  out += fmt::format("  median_abs_rel_error: {}\n  max_abs_rel_error: {}\n", num(model.median_abs_rel_error),
                     num(model.max_abs_rel_error));
  out += model.fit_rows.empty() ? "  rows: []\n" : "  rows:\n";
  for (const auto& r : model.fit_rows) {
    out += fmt::format(
        "    - {{source: {}, collective: {}, algorithm: {}, n: {}, size_bytes: {}, measured_s: {}, predicted_s: {}, "
        "rel_error: {}, role: {}, regime: {}}}\n",
        yaml_quoted(r.source), yaml_quoted(r.collective), yaml_quoted(r.algorithm), r.n, num(r.size_bytes), num(r.measured_s),
        num(r.predicted_s), num(r.rel_error), yaml_quoted(r.role), r.regime);
  }
  return out;
}

void write_model_file(const ModelFile& model, const std::filesystem::path& path) {
  write_file_atomically(path.string(), model_file_to_yaml(model));
}

ModelFile parse_model_file(std::string_view yaml_text, std::string_view source) {
  YAML::Node root;
  try {
    root = only_document(load_yaml_documents(std::string(yaml_text)), source, [&](std::size_t line) {
      return fmt::format("{}:{}: a second YAML document starts here (after '---'); a model file is one document",
                         source, line);
    });
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}:{}: YAML syntax error: {}", source, e.mark.line + 1, yaml_parse_problem(e)));
  }
  const Reader r(source);
  if (!root || root.IsNull()) throw ConfigError(fmt::format("{}:1: the model file is empty", source));
  // Before any key is looked up (an unclosed quote swallows the keys after it); the sources of
  // terms and the provenance's method and command are prose, which may be wrapped.
  static constexpr std::string_view kFreeText[] = {"source", "method", "command"};
  if (const auto multiline = find_multiline_value(root, yaml_text, kFreeText)) {
    r.fail(multiline->node, fmt::format("'{}' {}", multiline->path, multiline->problem));
  }
  const YAML::Node version = r.require(root, "version", "");
  const auto version_number = r.unsigned_integer(version, "version");
  if (version_number < kOldestVersion || version_number > kVersion) {
    r.fail(version, fmt::format("'version' = {} is not supported (this collsim reads versions {}..{})", version.Scalar(),
                                kOldestVersion, kVersion));
  }
  const int file_version = static_cast<int>(version_number);
  if (file_version >= 2) {
    r.check_keys(root, "", {"format", "version", "name", "execution", "terms", "link", "link_classes", "gamma_s_per_byte",
                            "unidentified_classes", "regimes", "provenance", "fit"});
  } else {
    r.check_keys(root, "", {"format", "version", "name", "link", "link_classes", "gamma_s_per_byte",
                            "unidentified_classes", "regimes", "provenance", "fit"});
  }
  const YAML::Node format = r.require(root, "format", "");
  if (r.scalar(format, "format") != kFormat) {
    r.fail(format, fmt::format("'format' = '{}' must be '{}'", format.Scalar(), kFormat));
  }
  ModelFile model;
  model.source = std::string(source);
  if (const YAML::Node name = yaml_child(root, "name")) model.name = r.scalar(name, "name");
  read_links(r, root, model);
  if (const YAML::Node e = yaml_child(root, "execution")) read_execution(r, e, model);
  if (const YAML::Node t = yaml_child(root, "terms")) read_terms(r, t, model);
  if (const YAML::Node regimes = yaml_child(root, "regimes")) {
    if (!regimes.IsSequence() || regimes.size() == 0) r.fail(regimes, "'regimes' must be a non-empty list");
    for (std::size_t k = 0; k < regimes.size(); ++k) {
      model.regimes.push_back(read_regime(r, regimes[k], fmt::format("regimes[{}]", k), file_version));
      // A time asked for under a protocol takes that protocol's regime: two would leave it to
      // their order. Version 1 regimes are size ranges only (no protocol), as they always were.
      for (std::size_t j = 0; file_version >= 2 && j < k; ++j) {
        if (model.regimes[j].protocol != model.regimes[k].protocol) continue;
        const YAML::Node protocol = yaml_child(regimes[k], "protocol");
        r.fail(protocol ? protocol : regimes[k],
               fmt::format("'regimes[{}].protocol' = {}{} is also regimes[{}]'s: each protocol has one regime (give "
                           "each regime its 'protocol': LL, LL128 or Simple)",
                           k, protocol_name(model.regimes[k].protocol), protocol ? "" : " (the default)", j));
      }
      if (k > 0 && !(model.regimes[k - 1].max_size_bytes < model.regimes[k].min_size_bytes)) {
        r.fail(regimes[k], fmt::format("'regimes[{}].min_size_bytes' = {} must be above regimes[{}].max_size_bytes = {} "
                                       "(ascending, non-overlapping ranges)",
                                       k, model.regimes[k].min_size_bytes, k - 1, model.regimes[k - 1].max_size_bytes));
      }
    }
  }
  if (const YAML::Node p = yaml_child(root, "provenance")) model.provenance = read_provenance(r, p);
  if (const YAML::Node f = yaml_child(root, "fit")) read_fit(r, f, model);
  return model;
}

ModelFile read_model_file(const std::filesystem::path& path) {
  const std::string text = read_text_file(path, "", kConfigFileMaxBytes);
  ModelFile model = parse_model_file(text, path.string());
  if (model.name.empty()) model.name = path.stem().string();
  return model;
}

}  // namespace collsim
