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

/// A UTF-8 byte order mark, which spreadsheets and some editors write before the first line: it
/// is not part of the first column's name, key or record.
inline constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

/// s without a leading byte order mark (a view into s).
inline std::string_view without_byte_order_mark(std::string_view s) {
  if (s.starts_with(kByteOrderMark)) s.remove_prefix(kByteOrderMark.size());
  return s;
}

}  // namespace collsim::text
