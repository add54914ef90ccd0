#include "collsim/experiments/args.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <limits>

#include "collsim/experiments/output_path.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/quote.hpp"

namespace collsim {

ArgParser::ArgParser(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)), invocation_("collsim " + command_) {}

ArgParser& ArgParser::program(std::string name) {
  invocation_ = std::move(name);
  return *this;
}

ArgParser& ArgParser::option(std::string name, std::string alias, std::string value_name,
                             std::string help, std::optional<std::string> default_value) {
  specs_.push_back(Spec{std::move(name), std::move(alias), std::move(value_name), std::move(help),
                        std::move(default_value), false});
  return *this;
}

ArgParser& ArgParser::flag(std::string name, std::string help) {
  specs_.push_back(Spec{std::move(name), "", "", std::move(help), std::nullopt, true});
  return *this;
}

ArgParser& ArgParser::positional(std::string name, std::string help, bool required) {
  positional_name_ = std::move(name);
  positional_help_ = std::move(help);
  positional_required_ = required;
  accepts_positionals_ = true;
  return *this;
}

const ArgParser::Spec* ArgParser::find(std::string_view token) const {
  for (const auto& s : specs_) {
    if ((token.size() == s.name.size() + 2 && token.substr(0, 2) == "--" && token.substr(2) == s.name) ||
        (!s.alias.empty() && token == s.alias)) {
      return &s;
    }
  }
  return nullptr;
}

bool ArgParser::parse(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string token = args[i];
    if (token == "--help" || token == "-h") return false;
    if (token.size() > 1 && token[0] == '-' && !(token.size() > 1 && std::isdigit(static_cast<unsigned char>(token[1])))) {
      std::optional<std::string> inline_value;
      if (const auto eq = token.find('='); eq != std::string::npos && token.rfind("--", 0) == 0) {
        inline_value = token.substr(eq + 1);
        token = token.substr(0, eq);
      }
      const Spec* spec = find(token);
      if (spec == nullptr) {
        throw ConfigError(fmt::format("{}: unknown option '{}' (see {} --help)", command_, quote_excerpt(token), invocation_));
      }
      if (values_.count(spec->name) != 0) {
        throw ConfigError(fmt::format("{}: option --{} given twice", command_, spec->name));
      }
      if (spec->is_flag) {
        if (inline_value) throw ConfigError(fmt::format("{}: flag --{} takes no value", command_, spec->name));
        values_.emplace(spec->name, std::string(1, '1'));  // emplace: GCC 12 -Wrestrict false positive on operator=(const char*)
        continue;
      }
      if (inline_value) {
        values_[spec->name] = *inline_value;
      } else if (i + 1 < args.size()) {
        values_[spec->name] = args[++i];
      } else {
        throw ConfigError(fmt::format("{}: option --{} needs a value ({})", command_, spec->name, spec->value_name));
      }
      // No option takes an empty value: `--topology ''` silently ran nvswitch, `--model ''`
      // said only "cannot read ''" (an unset shell variable, most likely).
      if (values_[spec->name].empty()) {
        throw ConfigError(fmt::format("{}: option --{} is empty (it needs {})", command_, spec->name, spec->value_name));
      }
      continue;
    }
    if (!accepts_positionals_) {
      throw ConfigError(fmt::format("{}: unexpected argument '{}'", command_, quote_excerpt(token)));
    }
    positionals_.push_back(token);
  }
  if (positional_required_ && positionals_.empty()) {
    throw ConfigError(fmt::format("{}: missing {} (see {} --help)", command_, positional_name_, invocation_));
  }
  return true;
}

bool ArgParser::has(std::string_view name) const {
  if (values_.find(name) != values_.end()) return true;
  for (const auto& s : specs_) {
    if (s.name == name && s.default_value) return true;
  }
  return false;
}

std::optional<std::string> ArgParser::get_optional(std::string_view name) const {
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  for (const auto& s : specs_) {
    if (s.name == name) return s.default_value;
  }
  throw InternalError(fmt::format("option --{} was never declared", name));
}

std::string ArgParser::get(std::string_view name) const {
  if (auto v = get_optional(name)) return *v;
  throw ConfigError(fmt::format("{}: option --{} is required", command_, name));
}

bool ArgParser::flag_set(std::string_view name) const { return values_.find(name) != values_.end(); }

std::string ArgParser::help() const {
  std::string text = fmt::format("usage: {} [options]{}\n\n{}\n\noptions:\n", invocation_,
                                 accepts_positionals_ ? fmt::format(" {}", positional_name_) : std::string(), summary_);
  if (accepts_positionals_) text += fmt::format("  {:<28} {}\n", positional_name_, positional_help_);
  for (const auto& s : specs_) {
    std::string left = s.alias.empty() ? fmt::format("--{}", s.name) : fmt::format("{}, --{}", s.alias, s.name);
    if (!s.is_flag) left = fmt::format("{} {}", left, s.value_name);
    text += fmt::format("  {:<28} {}{}\n", left, s.help,
                        s.default_value ? fmt::format(" (default: {})", *s.default_value) : "");
  }
  text += fmt::format("  {:<28} {}\n", "-h, --help", "show this help");
  return text;
}

namespace {

// A newline or tab in an output name is a quoting mistake far more often than a wish: --out
// $'r5\n' made a directory whose name ends in a newline.
void reject_control_characters(const std::string& text, std::string_view command, std::string_view option) {
  if (!holds_control_character(text)) return;
  throw ConfigError(fmt::format("{}: {} '{}' holds a control character (a newline or tab?); give a plain name", command,
                                option, quote_excerpt(text, 200)));
}

}  // namespace

std::string output_file_option(const std::string& text, std::string_view command, std::string_view option) {
  namespace fs = std::filesystem;
  if (text.empty()) throw ConfigError(fmt::format("{}: {} needs a file name (got an empty path)", command, option));
  reject_control_characters(text, command, option);
  std::error_code ec;
  const fs::path parent = fs::path(text).parent_path();
  if (!parent.empty() && !fs::exists(parent, ec)) {
    throw ConfigError(fmt::format("{}: {} '{}': directory '{}' does not exist (collsim does not create it)", command,
                                  option, quote_excerpt(text, 200), quote_excerpt(parent.string(), 200)));
  }
  check_output_file(text, command, option);  // a directory, a parent that is a file, no write permission
  return text;
}

std::string output_dir_option(const std::string& text, std::string_view command, std::string_view option) {
  if (text.empty()) throw ConfigError(fmt::format("{}: {} needs a directory (got an empty path)", command, option));
  reject_control_characters(text, command, option);
  std::error_code ec;
  if (std::filesystem::exists(text, ec) && !std::filesystem::is_directory(text, ec)) {
    throw ConfigError(
        fmt::format("{}: {} '{}' exists and is not a directory", command, option, quote_excerpt(text, 200)));
  }
  // What creating the directory would meet, found without creating it, so that `run --dry-run`
  // refuses what the run refuses: a name too long for the system, a file where a parent should be.
  const auto cannot_create = [&](const std::string& why) {
    return ConfigError(
        fmt::format("{}: {} '{}': cannot create the directory: {}", command, option, quote_excerpt(text, 200), why));
  };
  const std::filesystem::file_status status = std::filesystem::status(text, ec);
  if (ec && status.type() != std::filesystem::file_type::not_found) throw cannot_create(ec.message());
  if (status.type() == std::filesystem::file_type::not_found) {
    for (std::filesystem::path p = std::filesystem::path(text).parent_path(); !p.empty() && p != p.root_path();
         p = p.parent_path()) {
      const std::filesystem::file_status above = std::filesystem::status(p, ec);
      if (above.type() == std::filesystem::file_type::not_found) continue;
      if (!std::filesystem::is_directory(above)) throw cannot_create(std::strerror(ENOTDIR));
      break;
    }
  }
  return text;
}

unsigned long long parse_unsigned(std::string_view text, std::string_view what) {
  unsigned long long value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range && ptr == text.data() + text.size()) {
    throw ConfigError(fmt::format("{}: '{}' is too large", what, quote_excerpt(text)));
  }
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
    throw ConfigError(fmt::format("{}: '{}' is not a non-negative integer", what, quote_excerpt(text)));
  }
  return value;
}

std::uint32_t parse_u32(std::string_view text, std::string_view what) {
  const unsigned long long value = parse_unsigned(text, what);
  // A cast would keep the low 32 bits: -n 4294967298 would run with n = 2.
  if (value > std::numeric_limits<std::uint32_t>::max()) {
    throw ConfigError(fmt::format("{}: {} is too large (at most {})", what, value, std::numeric_limits<std::uint32_t>::max()));
  }
  return static_cast<std::uint32_t>(value);
}

std::vector<unsigned long long> parse_uint_list(std::string_view text, std::string_view what) {
  std::vector<unsigned long long> values;
  if (const auto dots = text.find(".."); dots != std::string_view::npos) {
    const auto lo = parse_unsigned(text.substr(0, dots), what);
    const auto hi = parse_unsigned(text.substr(dots + 2), what);
    if (hi < lo) throw ConfigError(fmt::format("{}: empty range '{}'", what, quote_excerpt(text)));
    if (hi - lo > 1'000'000) throw ConfigError(fmt::format("{}: range '{}' is too long", what, quote_excerpt(text)));
    for (auto v = lo; v <= hi; ++v) values.push_back(v);
    return values;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const auto piece = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    values.push_back(parse_unsigned(piece, what));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

}  // namespace collsim
