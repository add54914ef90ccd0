// A small strict JSON reader for the trace files models/ parses (NCCL Inspector output).
// Private to models/: we only need to walk a few keys, and Debian's JSON libraries are not a
// dependency of collsim. Every value remembers the 1-based line it starts on, so that errors in
// a large dump can name the record.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collsim/models/error.hpp"

namespace collsim::json {

struct Value {
  enum class Type { Null, Bool, Number, String, Array, Object };
  Type type = Type::Null;
  std::size_t line = 0;
  bool boolean = false;
  double number = 0.0;
  /// String: the unescaped text. Number: the text as written (to tell integers apart).
  std::string text;
  std::vector<Value> items;                           ///< Array
  std::vector<std::pair<std::string, Value>> fields;  ///< Object, in file order

  /// The field `key` of an object, or nullptr (also when this is not an object).
  const Value* find(std::string_view key) const;
};

/// A syntax error at the end of the text: the last value is unfinished (a writer stopped
/// mid-record), as opposed to one that is malformed as written.
struct IncompleteError : ConfigError {
  using ConfigError::ConfigError;
};

/// The name of a type for messages ("an object", "a number", ...).
std::string_view type_name(Value::Type type);

/// Parses a stream of JSON values separated by whitespace (one value is the common case; NCCL
/// Inspector appends one object per collective). Throws ConfigError "SOURCE:LINE: ..." on a
/// syntax error, IncompleteError when the text ends inside a value.
std::vector<Value> parse_stream(std::string_view text, std::string_view source);

}  // namespace collsim::json
