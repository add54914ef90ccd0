#include "json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <tuple>

#include "collsim/models/error.hpp"

namespace collsim::json {
namespace {

// Nesting deeper than this is not a trace: refuse it rather than risk the stack.
constexpr int kMaxDepth = 64;

class Reader {
 public:
  Reader(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  std::vector<Value> stream() {
    std::vector<Value> values;
    skip_space();
    while (pos_ < text_.size()) {
      values.push_back(value(0));
      skip_space();
    }
    return values;
  }

 private:
  // An error found where only whitespace is left (a record cut off by the end of the file,
  // maybe before its line's CR LF) is an unfinished value (IncompleteError), any other a value
  // that is wrong as written: a caller may drop an unfinished last record, never a bad one.
  [[noreturn]] void fail(const std::string& what) const {
    const std::string message = fmt::format("{}:{}: invalid JSON: {}", source_, line_, what);
    if (only_space_from(pos_)) throw IncompleteError(message);
    throw ConfigError(message);
  }

  bool only_space_from(std::size_t at) const {
    for (std::size_t i = at; i < text_.size(); ++i) {
      if (!std::isspace(static_cast<unsigned char>(text_[i]))) return false;
    }
    return true;
  }

  // The text from pos_ to the end without its trailing whitespace.
  std::string_view rest_trimmed() const {
    std::string_view rest = text_.substr(pos_);
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.remove_suffix(1);
    return rest;
  }

  // Fails as unfinished when what is left of the text is a cut-off start of `whole`.
  void fail_if_cut_off(std::string_view whole) {
    const std::string_view rest = rest_trimmed();
    if (rest.size() < whole.size() && whole.substr(0, rest.size()) == rest) {
      pos_ = text_.size();
      fail("unexpected end of the file");
    }
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) {
      if (text_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void expect(char c) {
    skip_space();
    if (peek() != c) {
      fail(pos_ < text_.size() ? fmt::format("expected '{}', found '{}'", c, text_[pos_])
                               : fmt::format("expected '{}', found the end of the file", c));
    }
    ++pos_;
  }

  Value value(int depth) {
    if (depth > kMaxDepth) fail(fmt::format("nested deeper than {} levels", kMaxDepth));
    skip_space();
    Value v;
    v.line = line_;
    const char c = peek();
    if (c == '{') {
      v.type = Value::Type::Object;
      ++pos_;
      skip_space();
      if (peek() == '}') {
        ++pos_;
        return v;
      }
      while (true) {
        skip_space();
        if (peek() != '"') fail("expected a quoted key");
        std::string key = string();
        // Which of two values a reader takes differs between readers: the trace is ambiguous.
        for (const auto& [name, ignored] : v.fields) {
          if (name == key) fail(fmt::format("the key '{}' appears twice in one object", key));
        }
        expect(':');
        v.fields.emplace_back(std::move(key), value(depth + 1));
        skip_space();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.type = Value::Type::Array;
      ++pos_;
      skip_space();
      if (peek() == ']') {
        ++pos_;
        return v;
      }
      while (true) {
        v.items.push_back(value(depth + 1));
        skip_space();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.type = Value::Type::String;
      v.text = string();
      return v;
    }
    for (const auto& [word, type, flag] : {std::tuple{"true", Value::Type::Bool, true},
                                           std::tuple{"false", Value::Type::Bool, false},
                                           std::tuple{"null", Value::Type::Null, false}}) {
      const std::string_view w(word);
      if (text_.substr(pos_, w.size()) == w) {
        pos_ += w.size();
        v.type = type;
        v.boolean = flag;
        return v;
      }
      fail_if_cut_off(w);  // "tru" at the end
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      const std::size_t begin = pos_;
      while (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) ||
                                     std::string_view("+-.eE").find(text_[pos_]) != std::string_view::npos)) {
        ++pos_;
      }
      v.type = Value::Type::Number;
      v.text = std::string(text_.substr(begin, pos_ - begin));
      const auto [end, ec] = std::from_chars(v.text.data(), v.text.data() + v.text.size(), v.number);
      if (ec != std::errc() || end != v.text.data() + v.text.size()) fail(fmt::format("'{}' is not a number", v.text));
      return v;
    }
    if (pos_ >= text_.size()) fail("unexpected end of the file");
    fail(fmt::format("unexpected character '{}'", c));
  }

  // JSON's escapes only (anything else is an error, as raw control characters are); \u is
  // decoded only for ASCII since trace ids and names are ASCII.
  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (c == '\n') fail("line break inside a string");
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character inside a string (JSON escapes them)");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) fail("unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'u': {
          unsigned code = 0;
          const auto hex = text_.substr(pos_, 4);
          const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), code, 16);
          if (hex.size() != 4 || ec != std::errc() || end != hex.data() + 4) {
            const std::string_view rest = rest_trimmed();  // "\u00" at the end: cut off
            const auto hex_digit = [](char h) { return std::isxdigit(static_cast<unsigned char>(h)) != 0; };
            if (rest.size() < 4 && std::all_of(rest.begin(), rest.end(), hex_digit)) {
              pos_ = text_.size();
              fail("unexpected end of the file");
            }
            fail("bad \\u escape");
          }
          pos_ += 4;
          out.push_back(code < 0x80 ? static_cast<char>(code) : '?');
          break;
        }
        case '"':
        case '\\':
        case '/': out.push_back(e); break;
        default: fail(fmt::format("'\\{}' is not a JSON escape", e));
      }
    }
  }

  std::string_view text_;
  std::string_view source_;
  std::size_t pos_ = 0;
  std::size_t line_ = 1;
};

}  // namespace

const Value* Value::find(std::string_view key) const {
  for (const auto& [k, v] : fields) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string_view type_name(Value::Type type) {
  switch (type) {
    case Value::Type::Null: return "null";
    case Value::Type::Bool: return "a boolean";
    case Value::Type::Number: return "a number";
    case Value::Type::String: return "a string";
    case Value::Type::Array: return "an array";
    case Value::Type::Object: return "an object";
  }
  return "unknown";
}

std::vector<Value> parse_stream(std::string_view text, std::string_view source) {
  return Reader(text, source).stream();
}

}  // namespace collsim::json
