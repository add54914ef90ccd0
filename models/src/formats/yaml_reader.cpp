#include "collsim/models/formats/yaml_reader.hpp"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <vector>

#include "collsim/models/error.hpp"
#include "collsim/models/quote.hpp"
#include "text.hpp"

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

void check_expanded_size(const YAML::Node& root, std::string_view source) {
  // Depth first over the expanded tree: an alias is walked again wherever it is used, as the
  // readers walk it. Counting stops at the limit, so the check costs at most that many steps.
  std::vector<YAML::Node> stack{root};
  std::size_t values = 0;
  while (!stack.empty()) {
    const YAML::Node node = stack.back();
    stack.pop_back();
    if (++values > kMaxYamlValues) {
      throw ConfigError(fmt::format("{}: the YAML holds more than {} values once its aliases are expanded (aliases "
                                    "that repeat aliases?)", source, kMaxYamlValues));
    }
    if (node.IsSequence()) {
      for (const auto& item : node) stack.push_back(item);
    } else if (node.IsMap()) {
      for (const auto& entry : node) {
        stack.push_back(entry.first);
        stack.push_back(entry.second);
      }
    }
  }
}

namespace {

// Sees only where each document starts; the nodes are built afterwards by LoadAll.
class DocumentStarts : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    stuck_ = started_ && mark.pos == last_.pos;
    started_ = true;
    last_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  bool stuck() const { return stuck_; }
  const YAML::Mark& last() const { return last_; }

 private:
  bool started_ = false;
  bool stuck_ = false;
  YAML::Mark last_ = YAML::Mark::null_mark();
};

}  // namespace

std::vector<YAML::Node> load_yaml_documents(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts starts;
  while (parser.HandleNextDocument(starts)) {
    if (starts.stuck()) {
      const std::size_t at = starts.last().pos >= 0 ? static_cast<std::size_t>(starts.last().pos) : 0;
      const std::string_view body = text::without_byte_order_mark(text);
      const char token = at < body.size() ? body[at] : ' ';
      const char* hint = token == ',' ? " (a ',' belongs inside [a, b] or {a: 1, b: 2})" : "";
      throw YAML::ParserException(starts.last(), fmt::format("'{}' cannot start a value here{}", token, hint));
    }
  }
  return YAML::LoadAll(text);
}

YAML::Node only_document(const std::vector<YAML::Node>& documents, std::string_view source,
                         const std::function<std::string(std::size_t line)>& second_document) {
  for (std::size_t i = 1; i < documents.size(); ++i) {
    if (!documents[i].IsNull()) throw ConfigError(second_document(documents[i].Mark().line + 1));
  }
  if (documents.empty()) return YAML::Node();
  check_expanded_size(documents.front(), source);
  return documents.front();
}

namespace {

// Where a scalar's text ends in the file, and how it was written. yaml-cpp marks a node at its
// first byte after the properties (anchor, tag), counting from after a byte order mark.
struct ScalarSource {
  std::string_view raw;   // between the quotes; to the end of the file when the closing quote is missing
  char quote = 0;         // '"', '\'', or 0 for a plain scalar
  bool unterminated = false;
};

std::optional<ScalarSource> scalar_source(std::string_view text, const YAML::Node& node) {
  const int mark = node.Mark().pos;
  if (mark < 0) return std::nullopt;
  std::size_t i = static_cast<std::size_t>(mark) + (text.size() - text::without_byte_order_mark(text).size());
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (i < text.size() && (text[i] == '&' || text[i] == '!')) {  // an anchor or tag before the value
    while (i < text.size() && !blank(text[i])) ++i;
    while (i < text.size() && blank(text[i])) ++i;
  }
  if (i >= text.size() || text[i] == '|' || text[i] == '>') return std::nullopt;
  ScalarSource source;
  if (text[i] == '"' || text[i] == '\'') {
    source.quote = text[i];
    std::size_t end = i + 1;
    for (; end < text.size(); ++end) {
      if (source.quote == '"' && text[end] == '\\') {
        ++end;  // an escape: the next byte, a quote included, belongs to the value
      } else if (text[end] == source.quote) {
        if (source.quote == '\'' && end + 1 < text.size() && text[end + 1] == '\'') {
          ++end;  // '' is a quote inside single quotes
        } else {
          break;
        }
      }
    }
    source.unterminated = end >= text.size();
    source.raw = text.substr(i + 1, std::min(end, text.size()) - (i + 1));
    if (source.unterminated) {
      while (!source.raw.empty() && blank(source.raw.back())) source.raw.remove_suffix(1);
    }
    return source;
  }
  // A plain scalar is its text with each line break and the indentation around it folded into
  // one space (or a newline for a blank line): walk both, letting blanks match blanks.
  const std::string& value = node.Scalar();
  std::size_t j = 0, end = i;
  while (j < value.size()) {
    if (end < text.size() && text[end] == value[j]) {
      ++end;
      ++j;
    } else if (end < text.size() && blank(text[end]) && (value[j] == ' ' || value[j] == '\n')) {
      while (end < text.size() && blank(text[end])) ++end;
      while (j < value.size() && (value[j] == ' ' || value[j] == '\n')) ++j;
    } else {
      return std::nullopt;  // not where yaml-cpp said (a UTF-16 file): nothing to say about it
    }
  }
  source.raw = text.substr(i, end - i);
  return source;
}

// The raw text for a message: line breaks shown as \n, cut to a short excerpt (the value may be
// the rest of the file).
std::string shown_raw(std::string_view raw) {
  std::string escaped;
  for (const char c : raw) {
    if (c == '\n') {
      escaped += "\\n";
    } else if (c == '\r') {
      escaped += "\\r";
    } else if (c == '\t') {
      escaped += "\\t";
    } else {
      escaped += c;
    }
  }
  return quote_excerpt(escaped, 60);
}

std::optional<YamlMultilineValue> multiline_in(const YAML::Node& node, const std::string& path, bool free_text,
                                               std::string_view text, std::span<const std::string_view> free_text_keys) {
  if (node.IsMap()) {
    for (const auto& entry : node) {
      if (!entry.first.IsScalar()) continue;
      const std::string& key = entry.first.Scalar();
      const bool is_free = std::find(free_text_keys.begin(), free_text_keys.end(), key) != free_text_keys.end();
      if (auto found = multiline_in(entry.second, yaml_key_path(path, key), is_free, text, free_text_keys)) return found;
    }
    return std::nullopt;
  }
  if (node.IsSequence()) {
    for (std::size_t k = 0; k < node.size(); ++k) {
      if (auto found = multiline_in(node[k], fmt::format("{}[{}]", path, k), free_text, text, free_text_keys)) return found;
    }
    return std::nullopt;
  }
  // A whole file that is one scalar is not YAML of ours at all; the reader says so.
  if (!node.IsScalar() || path.empty()) return std::nullopt;
  const std::optional<ScalarSource> source = scalar_source(text, node);
  if (!source) return std::nullopt;
  const auto lines = static_cast<std::size_t>(std::count(source->raw.begin(), source->raw.end(), '\n')) + 1;
  const char q = source->quote == 0 ? '\'' : source->quote;
  const std::string value = fmt::format("value {}{}{}", q, shown_raw(source->raw), q);
  if (!free_text && lines > 1) {
    const std::string hint = source->quote != 0 ? "an unterminated quote?" : "a line indented under it continues it";
    return YamlMultilineValue{node, path, fmt::format("{} spans {} lines; {}", value, lines, hint)};
  }
  // Free text may be wrapped, and an unclosed quote on the last line swallows nothing, but both
  // are still a mistake in the file.
  if (!source->unterminated) return std::nullopt;
  return YamlMultilineValue{node, path,
                            fmt::format("{} runs to the end of the file: its closing {} is missing", value, source->quote)};
}

}  // namespace

std::optional<YamlMultilineValue> find_multiline_value(const YAML::Node& root, std::string_view text,
                                                       std::span<const std::string_view> free_text_keys) {
  return multiline_in(root, "", false, text, free_text_keys);
}

std::string yaml_parse_problem(const YAML::Exception& e) {
  if (dynamic_cast<const YAML::DeepRecursion*>(&e) != nullptr) {
    return "the document nests too deeply (the YAML reader stops at about 500 levels of brackets or indentation)";
  }
  return e.msg;
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
