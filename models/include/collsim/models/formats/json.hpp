// Minimal helpers for writing JSON by hand with fmt (results, traces, stats).
#pragma once

#include <string>
#include <string_view>

namespace collsim {

/// `text` as a quoted JSON string with the mandatory escapes.
std::string json_string(std::string_view text);

/// A finite double as a JSON number that round-trips (17 significant digits); NaN/inf -> null.
std::string json_number(double value);

}  // namespace collsim
