// Shared pieces of the YAML readers (experiment specs, arrival models, topologies, link
// model files): walking a map with unknown keys rejected, finding an entry, and the
// "key.path (line N)" location label. Each reader keeps its own error wording, because
// users and tests rely on it; this file only owns the walking logic.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace collsim {

/// A map's entries in file order: (key text, value node).
using YamlEntries = std::vector<std::pair<std::string, YAML::Node>>;

/// "nothing", "a map", "a list", ... for "expected X, got <type_name>" messages.
std::string_view yaml_type_name(const YAML::Node& node);

/// "path.key", or just "key" at the top level (empty `path`).
std::string yaml_key_path(std::string_view path, std::string_view key);

/// "key.path (line N)" with N 1-based, or just "key.path" when the node has no position.
std::string yaml_node_label(std::string_view key_path, const YAML::Node& node);

/// Values a YAML document may hold once its aliases are expanded. A file of a dozen lines whose
/// aliases repeat aliases ("billion laughs") expands to 9^12 values, and the readers, which walk
/// every value, ran for hours; the largest real input (a spec listing a delay per rank of 16,384)
/// holds tens of thousands.
inline constexpr std::size_t kMaxYamlValues = 1'000'000;

/// Throws ConfigError naming `source` when `root`, its aliases expanded, holds more than
/// kMaxYamlValues values (it stops counting there).
void check_expanded_size(const YAML::Node& root, std::string_view source);

/// Every document of `text`, as YAML::LoadAll reads them. Why not LoadAll itself: yaml-cpp 0.7
/// leaves a token it cannot start a node with (a ',' outside brackets, as in a file that is just
/// ",") unread and returns an empty document in front of it, again and again, so LoadAll never
/// returned and filled the memory. Documents are counted first; one that starts where the last
/// one started read nothing, and that throws YAML::ParserException at its mark, which the readers
/// report as any syntax error.
std::vector<YAML::Node> load_yaml_documents(const std::string& text);

/// The first of a file's documents (null if there is none), checked by check_expanded_size. A
/// second, non-empty document throws ConfigError(second_document(its 1-based line)): YAML::Load
/// and LoadFile read the first document and silently drop the rest, so readers load all and take
/// one through here.
YAML::Node only_document(const std::vector<YAML::Node>& documents, std::string_view source,
                         const std::function<std::string(std::size_t line)>& second_document);

/// A scalar written across lines of its file where its key expects one line.
struct YamlMultilineValue {
  YAML::Node node;      ///< the value; its line is the one to report
  std::string path;     ///< its key path: "name", "algorithms[1]", "cluster.nic_bandwidth"
  std::string problem;  ///< 'value "abc\nalgorithms: [ring]" spans 2 lines; an unterminated quote?'
};

/// The first value of `root`, in file order, whose text in `text` (the file `root` was parsed
/// from) spans lines, or whose closing quote is missing: names, numbers and paths are one line,
/// so every value is checked except those of `free_text_keys` (at any depth; a description may
/// be wrapped), which are reported only when their closing quote is missing. Why: yaml-cpp 0.7 reads an unclosed quote, as in
/// `name: "abc`, to the end of the file (to the next quote) without an error, so the keys after
/// it vanished into the value and the error was about one of them being missing. Block scalars
/// (`|`, `>`) are multi-line by choice and are not reported. nullopt when there is none.
std::optional<YamlMultilineValue> find_multiline_value(const YAML::Node& root, std::string_view text,
                                                       std::span<const std::string_view> free_text_keys);

/// What a yaml-cpp parse error says, in words a user can act on. yaml-cpp 0.7 reports nesting
/// past its depth guard (about 500 levels of brackets or indentation) as "bad file", which reads
/// as an unreadable file; every other message is passed on as it is.
std::string yaml_parse_problem(const YAML::Exception& e);

/// "a, b, c": the known-keys list shown in unknown-key messages.
std::string yaml_join_keys(std::span<const std::string_view> keys);

/// How one reader reads keys and words its key errors.
struct YamlKeyRules {
  /// Text of a key node; `map_path` is the map's own path. May throw the reader's error for a
  /// key it cannot use (e.g. a non-scalar key).
  std::function<std::string(const YAML::Node& key_node, std::string_view map_path)> key_text;
  /// Message for a key not in the known list (`known_list` as yaml_join_keys gives it).
  std::function<std::string(const YAML::Node& key_node, std::string_view map_path, std::string_view key,
                            std::string_view known_list)>
      unknown_key;
  /// Message for a key given twice; left empty, repeats are accepted (the reader's own
  /// lookups then decide which value counts).
  std::function<std::string(const YAML::Node& key_node, std::string_view key_path, std::string_view key)> repeated_key;
};

/// Where an error about `node` at `key_path` is, as the prefix before ": problem".
using YamlLabeler = std::function<std::string(std::string_view key_path, const YAML::Node& node)>;

/// The rules of the spec and arrival readers: non-scalar keys are reported by `key_text`,
/// and "<label>: unknown key 'k' (known keys: a, b)" / "<label>: key 'k' is given twice"
/// use `label` at the key's path and position.
YamlKeyRules labelled_key_rules(YamlLabeler label,
                                std::function<std::string(const YAML::Node& key_node, std::string_view map_path)> key_text);

/// The entries of `map` in file order, with every key checked against `known`.
/// Precondition: map.IsMap() (callers word their own "expected a map" errors; InternalError otherwise).
/// Throws: ConfigError with the rules' message for an unknown or (if rules.repeated_key is
/// set) repeated key; whatever rules.key_text throws.
YamlEntries checked_map_entries(const YAML::Node& map, std::string_view path, std::span<const std::string_view> known,
                                const YamlKeyRules& rules);

/// map[key], except that an empty value (`key:` and nothing) is placed on the key's line, as in
/// checked_map_entries; undefined (false) when the key is absent or `map` is not a map.
YAML::Node yaml_child(const YAML::Node& map, std::string_view key);

/// The first entry named `key`, or nullptr. The pointer lives as long as `entries`.
const YAML::Node* find_entry(const YamlEntries& entries, std::string_view key);

}  // namespace collsim
