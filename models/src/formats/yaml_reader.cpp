#include "collsim/models/formats/yaml_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "collsim/models/error.hpp"
#include "collsim/models/quote.hpp"

namespace collsim {

std::string_view yaml_type_name(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Null: return "nothing (null)";
    case YAML::NodeType::Undefined: return "nothing";
  }
  return "an unknown node";
}

std::string yaml_key_path(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

std::string yaml_node_label(std::string_view key_path, const YAML::Node& node) {
  // yaml-cpp lines are 0-based; nodes built in code have none.
  const int line = node.Mark().line;
  if (line < 0) return std::string(key_path);
  return fmt::format("{} (line {})", key_path, line + 1);
}

YAML::Node only_document(const std::vector<YAML::Node>& documents,
                         const std::function<std::string(std::size_t line)>& second_document) {
  for (std::size_t i = 1; i < documents.size(); ++i) {
    if (!documents[i].IsNull()) throw ConfigError(second_document(documents[i].Mark().line + 1));
  }
  return documents.empty() ? YAML::Node() : documents.front();
}

std::string yaml_join_keys(std::span<const std::string_view> keys) {
  std::string text;
  for (auto k : keys) text += fmt::format("{}{}", text.empty() ? "" : ", ", k);
  return text;
}

YamlKeyRules labelled_key_rules(YamlLabeler label,
                                std::function<std::string(const YAML::Node& key_node, std::string_view map_path)> key_text) {
  YamlKeyRules rules;
  rules.key_text = std::move(key_text);
  rules.unknown_key = [label](const YAML::Node& key_node, std::string_view map_path, std::string_view key,
                              std::string_view known_list) {
    const std::string shown = quote_excerpt(key, kKeyExcerptChars);
    return fmt::format("{}: unknown key '{}' (known keys: {})", label(yaml_key_path(map_path, shown), key_node), shown,
                       known_list);
  };
  rules.repeated_key = [label](const YAML::Node& key_node, std::string_view key_path, std::string_view key) {
    return fmt::format("{}: key '{}' is given twice", label(key_path, key_node), quote_excerpt(key, kKeyExcerptChars));
  };
  return rules;
}

namespace {

// `value` as the entry's value. An empty value (`key:` and nothing after it) is a null node that
// yaml-cpp marks where the next token starts, often the next line, so errors about it would name
// the wrong line: a null node parsed on the key's line stands in for it (the same value).
YAML::Node value_on_key_line(const YAML::Node& key, const YAML::Node& value) {
  const int line = key.Mark().line;
  if (!value.IsNull() || line < 0 || value.Mark().line == line) return value;
  return YAML::Load(std::string(static_cast<std::size_t>(line), '\n') + "~");
}

}  // namespace

YamlEntries checked_map_entries(const YAML::Node& map, std::string_view path, std::span<const std::string_view> known,
                                const YamlKeyRules& rules) {
  COLLSIM_ASSERT(map.IsMap(), fmt::format("checked_map_entries: '{}' is not a map", path));
  YamlEntries entries;
  std::set<std::string, std::less<>> seen;
  for (const auto& entry : map) {
    const std::string key = rules.key_text(entry.first, path);
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      throw ConfigError(rules.unknown_key(entry.first, path, key, yaml_join_keys(known)));
    }
    if (rules.repeated_key && !seen.insert(key).second) {
      throw ConfigError(rules.repeated_key(entry.first, yaml_key_path(path, key), key));
    }
    entries.emplace_back(key, value_on_key_line(entry.first, entry.second));
  }
  return entries;
}

YAML::Node yaml_child(const YAML::Node& map, std::string_view key) {
  if (!map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  for (const auto& entry : map) {
    if (entry.first.IsScalar() && entry.first.Scalar() == key) {
      return value_on_key_line(entry.first, entry.second);
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

const YAML::Node* find_entry(const YamlEntries& entries, std::string_view key) {
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

}  // namespace collsim
