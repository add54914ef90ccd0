// Topology YAML files (configs/topologies/*.yaml) and the CLI's --topology shorthands.
// Unknown or misplaced keys are errors naming the key path and line: a typo in an oversub-
// scription key must not silently give a non-blocking fabric.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <initializer_list>
#include <limits>

#include "collsim/models/error.hpp"
#include "collsim/models/formats/text_file.hpp"
#include "collsim/models/formats/yaml_reader.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/topology.hpp"
#include "collsim/models/units.hpp"

#ifndef COLLSIM_SOURCE_DIR
#error "COLLSIM_SOURCE_DIR must be defined by the build (models/CMakeLists.txt)"
#endif

namespace collsim {
namespace {

namespace fs = std::filesystem;

// Where a key sits: "file.yaml:12" (yaml-cpp lines are 0-based).
std::string where(const std::string& file, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return file;
  return fmt::format("{}:{}", file, mark.line + 1);
}

class TopologyFile {
 public:
  explicit TopologyFile(std::string file) : file_(std::move(file)) {}

  // Rejects every key of `map` not in `allowed`, naming its path ("cluster.foo") and line.
  void only_keys(const YAML::Node& map, std::string_view prefix, std::initializer_list<std::string_view> allowed) const {
    if (!map.IsMap()) {
      throw ConfigError(fmt::format("{}: '{}' must be a mapping of keys to values", where(file_, map),
                                    prefix.empty() ? "top level" : prefix));
    }
    YamlKeyRules rules;
    rules.key_text = [this](const YAML::Node& key, std::string_view map_path) {
      if (!key.IsScalar()) {
        throw ConfigError(fmt::format("{}: a key of '{}' is {}; keys are plain names", where(file_, key),
                                      map_path.empty() ? "top level" : map_path, yaml_type_name(key)));
      }
      return key.Scalar();
    };
    rules.unknown_key = [this](const YAML::Node& key_node, std::string_view map_path, std::string_view key,
                               std::string_view known_list) {
      return fmt::format("{}: unknown key '{}' (known keys here: {})", where(file_, key_node),
                         yaml_key_path(map_path, quote_excerpt(key, kKeyExcerptChars)), known_list);
    };
    // A repeated key is an error as in experiment specs: the lookups see only the first one, so a
    // second 'oversubscription: 2' under a first '1' silently gave a non-blocking fabric.
    rules.repeated_key = [this](const YAML::Node& key_node, std::string_view key_path, std::string_view) {
      return fmt::format("{}: key '{}' is given twice", where(file_, key_node), quote_excerpt(key_path));
    };
    checked_map_entries(map, prefix, std::span(allowed.begin(), allowed.size()), rules);
  }

  std::string scalar(const YAML::Node& node, std::string_view key) const {
    if (!node.IsScalar()) {
      throw ConfigError(fmt::format("{}: '{}' must be a single value", where(file_, node), key));
    }
    return node.Scalar();
  }

  double duration(const YAML::Node& node, std::string_view key) const {
    return parse_duration_s(scalar(node, key), fmt::format("{}: '{}'", where(file_, node), key));
  }
  double s_per_byte(const YAML::Node& node, std::string_view key) const {
    return parse_s_per_byte(scalar(node, key), fmt::format("{}: '{}'", where(file_, node), key));
  }
  double bandwidth(const YAML::Node& node, std::string_view key) const {
    return parse_bandwidth_Bps(scalar(node, key), fmt::format("{}: '{}'", where(file_, node), key));
  }
  double ratio(const YAML::Node& node, std::string_view key) const {
    const std::string text = scalar(node, key);
    double value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size()) {
      throw ConfigError(fmt::format("{}: '{}' = '{}' is not a number", where(file_, node), key, quote_excerpt(text)));
    }
    return value;
  }
  std::uint32_t count(const YAML::Node& node, std::string_view key) const {
    const std::string text = scalar(node, key);
    std::uint32_t value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc::result_out_of_range && ptr == text.data() + text.size()) {
      throw ConfigError(fmt::format("{}: '{}' = '{}' is too large (at most {})", where(file_, node), key,
                                    quote_excerpt(text), std::numeric_limits<std::uint32_t>::max()));
    }
    if (ec != std::errc() || ptr != text.data() + text.size() || value == 0) {
      throw ConfigError(fmt::format("{}: '{}' = '{}' must be a whole number >= 1", where(file_, node), key, quote_excerpt(text)));
    }
    return value;
  }
  bool flag(const YAML::Node& node, std::string_view key) const {
    const std::string text = scalar(node, key);
    if (text == "true") return true;
    if (text == "false") return false;
    throw ConfigError(fmt::format("{}: '{}' = '{}' must be true or false", where(file_, node), key, quote_excerpt(text)));
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

TopologyKind parse_kind(const TopologyFile& f, const YAML::Node& node) {
  const std::string text = f.scalar(node, "kind");
  for (TopologyKind k : {TopologyKind::NvSwitch, TopologyKind::FullMesh, TopologyKind::Dgx1, TopologyKind::Cluster}) {
    if (text == topology_kind_name(k)) return k;
  }
  throw ConfigError(fmt::format("{}: kind '{}' is unknown (known kinds: nvswitch, full_mesh, dgx1, cluster)",
                                where(f.file(), node), quote_excerpt(text)));
}

ClusterSpec parse_cluster(const TopologyFile& f, const YAML::Node& node) {
  f.only_keys(node, "cluster",
              {"gpus_per_node", "nics_per_node", "nvlink_bandwidth", "nvlink_latency", "nic_bandwidth",
               "network_latency", "nodes_per_leaf", "oversubscription", "rail_optimized", "pxn"});
  ClusterSpec c;
  if (auto v = yaml_child(node, "gpus_per_node")) c.gpus_per_node = f.count(v, "cluster.gpus_per_node");
  if (auto v = yaml_child(node, "nics_per_node")) {
    c.nics_per_node = f.count(v, "cluster.nics_per_node");
    if (c.gpus_per_node % c.nics_per_node != 0) {
      throw ConfigError(fmt::format("{}: 'cluster.nics_per_node' = {} must divide cluster.gpus_per_node = {} (the "
                                    "GPUs of a node share its NICs evenly)",
                                    where(f.file(), v), c.nics_per_node, c.gpus_per_node));
    }
  }
  if (auto v = yaml_child(node, "nvlink_bandwidth")) c.nvlink_bandwidth_Bps = f.bandwidth(v, "cluster.nvlink_bandwidth");
  if (auto v = yaml_child(node, "nvlink_latency")) c.nvlink_latency_s = f.duration(v, "cluster.nvlink_latency");
  if (auto v = yaml_child(node, "nic_bandwidth")) c.nic_bandwidth_Bps = f.bandwidth(v, "cluster.nic_bandwidth");
  if (auto v = yaml_child(node, "network_latency")) c.network_latency_s = f.duration(v, "cluster.network_latency");
  if (auto v = yaml_child(node, "nodes_per_leaf")) c.nodes_per_leaf = f.count(v, "cluster.nodes_per_leaf");
  if (auto v = yaml_child(node, "oversubscription")) {
    c.oversubscription = f.ratio(v, "cluster.oversubscription");
    if (!(c.oversubscription >= 1.0 && c.oversubscription <= kMaxOversubscription)) {
      throw ConfigError(fmt::format("{}: 'cluster.oversubscription' = {} must be from 1 to {} (2 means 2:1)",
                                    where(f.file(), v), c.oversubscription, kMaxOversubscription));
    }
  }
  if (auto v = yaml_child(node, "rail_optimized")) c.rail_optimized = f.flag(v, "cluster.rail_optimized");
  if (auto v = yaml_child(node, "pxn")) {
    c.pxn = f.flag(v, "cluster.pxn");
    if (c.pxn && !c.rail_optimized) {
      throw ConfigError(fmt::format("{}: 'cluster.pxn' = true needs 'cluster.rail_optimized: true' (PXN moves a send "
                                    "onto the receiver's rail; without rails every NIC of a node is under one leaf)",
                                    where(f.file(), v)));
    }
  }
  return c;
}

Topology topology_from_yaml(const YAML::Node& root, const TopologyFile& f, const std::string& default_name,
                            std::optional<std::uint32_t> n_override) {
  f.only_keys(root, "", {"kind", "name", "description", "n", "latency", "bandwidth", "gamma", "switch_reduction",
                          "switch_reduction_efficiency", "cluster"});
  const YAML::Node kind_node = yaml_child(root, "kind");
  if (!kind_node) throw ConfigError(fmt::format("{}: missing key 'kind' (nvswitch, full_mesh, dgx1, cluster)", f.file()));
  const TopologyKind kind = parse_kind(f, kind_node);
  const YAML::Node name_node = yaml_child(root, "name");
  const std::string name = name_node ? f.scalar(name_node, "name") : default_name;

  // Keys that exist but do not apply to this kind are mistakes, not options to ignore.
  const bool is_cluster = kind == TopologyKind::Cluster;
  const YAML::Node latency_node = yaml_child(root, "latency");
  const YAML::Node bandwidth_node = yaml_child(root, "bandwidth");
  const YAML::Node cluster_node = yaml_child(root, "cluster");
  const auto not_for_clusters = [&](std::string_view key, const YAML::Node& node, std::string_view instead) {
    if (!is_cluster || !node) return;
    throw ConfigError(fmt::format("{}: key '{}' does not apply to kind cluster (use cluster.nvlink_{} and cluster.{})",
                                  where(f.file(), node), key, key, instead));
  };
  not_for_clusters("latency", latency_node, "network_latency");
  not_for_clusters("bandwidth", bandwidth_node, "nic_bandwidth");
  if (!is_cluster && cluster_node) {
    throw ConfigError(fmt::format("{}: key 'cluster' applies only to kind cluster, not {}", where(f.file(), cluster_node),
                                  topology_kind_name(kind)));
  }

  std::uint32_t n = 0;
  if (auto v = yaml_child(root, "n")) {
    const std::uint32_t gpus = f.count(v, "n");
    if (n_override && *n_override > gpus) {
      throw ConfigError(fmt::format("{}: {} ranks do not fit topology '{}' with n = {} GPUs", where(f.file(), v),
                                    *n_override, name, gpus));
    }
    n = n_override ? *n_override : gpus;
  } else if (n_override) {
    n = *n_override;
  } else if (kind == TopologyKind::Dgx1) {
    n = kDgx1Gpus;
  } else {
    throw ConfigError(fmt::format("{}: topology '{}' has no 'n'; give the number of ranks", f.file(), name));
  }

  LinkModel link;
  if (latency_node) link.latency_s = f.duration(latency_node, "latency");
  if (bandwidth_node) link.bandwidth_Bps = f.bandwidth(bandwidth_node, "bandwidth");
  if (auto v = yaml_child(root, "gamma")) link.gamma_s_per_byte = f.s_per_byte(v, "gamma");

  // Only an NVSwitch can reduce in the network; absent means it cannot (older files).
  bool switch_reduction = false;
  if (auto v = yaml_child(root, "switch_reduction")) {
    switch_reduction = f.flag(v, "switch_reduction");
    if (switch_reduction && kind != TopologyKind::NvSwitch && kind != TopologyKind::Cluster) {
      throw ConfigError(fmt::format("{}: 'switch_reduction' = true needs an NVSwitch (kind nvswitch or cluster); "
                                    "kind {} has none", where(f.file(), v), topology_kind_name(kind)));
    }
  }

  // The switch's reduce-and-multicast throughput relative to an NVLink port; 1 (none lost) when
  // absent, so files written before it keep their results.
  double switch_efficiency = 1.0;
  if (auto v = yaml_child(root, "switch_reduction_efficiency")) {
    if (!switch_reduction) {
      throw ConfigError(fmt::format("{}: 'switch_reduction_efficiency' needs 'switch_reduction: true'",
                                    where(f.file(), v)));
    }
    switch_efficiency = f.ratio(v, "switch_reduction_efficiency");
    // Below 0.1 % of the link is a typo, not a switch (1e-300 ran and printed a 2e297 s AllReduce).
    constexpr double kMinSwitchEfficiency = 1e-3;
    if (!(switch_efficiency >= kMinSwitchEfficiency && switch_efficiency <= 1.0)) {
      throw ConfigError(fmt::format("{}: 'switch_reduction_efficiency' = {} must be in [{:g}, 1]", where(f.file(), v),
                                    switch_efficiency, kMinSwitchEfficiency));
    }
  }

  // Read before the try below: its errors already name the file and line.
  const ClusterSpec cluster_spec = cluster_node ? parse_cluster(f, cluster_node) : ClusterSpec{};
  Topology topology;
  try {
    switch (kind) {
      case TopologyKind::NvSwitch: topology = make_nvswitch(n, link, name); break;
      case TopologyKind::FullMesh: topology = make_full_mesh(n, link, name); break;
      case TopologyKind::Dgx1:
        if (!bandwidth_node) link.bandwidth_Bps = 25e9;  // one NVLink 2.0, per direction
        topology = make_dgx1(n, link, name);
        break;
      case TopologyKind::Cluster: {
        topology = make_cluster(n, cluster_spec, link.gamma_s_per_byte, name);
        break;
      }
    }
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", f.file(), e.what()));
  }
  topology.switch_reduction = switch_reduction;
  topology.switch_reduction_efficiency = switch_efficiency;
  return topology;
}

bool looks_like_path(std::string_view s) {
  auto ends_with = [&](std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
  };
  return s.find('/') != std::string_view::npos || ends_with(".yaml") || ends_with(".yml");
}

std::string configs_or_default(std::string_view configs_dir) {
  return configs_dir.empty() ? default_configs_dir() : std::string(configs_dir);
}

}  // namespace

std::string default_configs_dir() { return std::string(COLLSIM_SOURCE_DIR) + "/configs"; }

std::vector<std::string> known_topology_names(std::string_view configs_dir) {
  const fs::path dir = fs::path(configs_or_default(configs_dir)) / "topologies";
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

fs::path topology_file(std::string_view path_or_name, std::string_view configs_dir) {
  if (looks_like_path(path_or_name)) return fs::path(std::string(path_or_name));
  return fs::path(configs_or_default(configs_dir)) / "topologies" / (std::string(path_or_name) + ".yaml");
}

Topology load_topology(std::string_view path_or_name, std::optional<std::uint32_t> n_override,
                       std::string_view configs_dir) {
  if (path_or_name.empty()) throw ConfigError("topology: empty name");
  if (n_override && *n_override == 0) throw ConfigError("topology: 0 ranks requested");
  const fs::path path = topology_file(path_or_name, configs_dir);
  const FileLookup file_kind = look_up_file(path);
  if (looks_like_path(path_or_name)) {
    switch (file_kind.kind) {
      case FileLookup::Kind::Regular:
        break;
      case FileLookup::Kind::Directory:
        throw ConfigError(fmt::format("topology file '{}' is a directory", path.string()));
      case FileLookup::Kind::Missing:
      case FileLookup::Kind::Other:
        throw ConfigError(fmt::format("topology file '{}' does not exist or is not a file", path.string()));
      case FileLookup::Kind::Unreachable:
        throw ConfigError(fmt::format("topology file '{}' {}", quote_excerpt(path.string()), file_kind.why));
    }
  } else {
    const std::string dir = configs_or_default(configs_dir);
    if (file_kind.kind != FileLookup::Kind::Regular) {
      std::string known;
      for (const auto& n : known_topology_names(dir)) known += fmt::format("{}{}", known.empty() ? "" : ", ", n);
      throw ConfigError(fmt::format("unknown topology '{}' (known: {}; or give a path to a .yaml file)",
                                    quote_excerpt(path_or_name), known.empty() ? "none found in " + dir + "/topologies" : known));
    }
  }
  const std::string file = path.string();
  const std::string text = read_text_file(path, "", kConfigFileMaxBytes);  // kept: find_multiline_value reads the source
  YAML::Node root;
  try {
    root = only_document(load_yaml_documents(text), file, [&](std::size_t line) {
      return fmt::format("{}:{}: a second YAML document starts here (after '---'); a topology file is one document",
                         file, line);
    });
  } catch (const YAML::ParserException& e) {
    throw ConfigError(fmt::format("{}:{}: invalid YAML: {}", file, e.mark.line + 1, yaml_parse_problem(e)));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: cannot read: {}", file, e.what()));
  }
  if (!root || root.IsNull()) throw ConfigError(fmt::format("{}: the file is empty", file));
  // Before any key is looked up: an unclosed quote swallows the keys after it.
  static constexpr std::string_view kFreeText[] = {"description"};
  if (const auto multiline = find_multiline_value(root, text, kFreeText)) {
    throw ConfigError(fmt::format("{}: '{}' {}", where(file, multiline->node), multiline->path, multiline->problem));
  }
  try {
    return topology_from_yaml(root, TopologyFile(file), path.stem().string(), n_override);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}:{}: {}", file, e.mark.line + 1, e.msg));
  }
}

bool topology_uses_link(std::string_view spec) { return spec.empty() || spec == "nvswitch" || spec == "full_mesh"; }

Topology resolve_topology(std::string_view spec, std::uint32_t n, const LinkModel& link, std::string_view configs_dir) {
  if (spec.empty() || spec == "nvswitch") return make_nvswitch(n, link);
  if (spec == "full_mesh") return make_full_mesh(n, link);
  return load_topology(spec, n, configs_dir);
}

}  // namespace collsim
