// Small text helpers shared by the parsers of models/ (units, CSVs, nccl-tests logs, CLI specs).
#pragma once

#include <cctype>
#include <string_view>

namespace collsim::text {

/// s without leading and trailing whitespace (a view into s).
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace collsim::text
