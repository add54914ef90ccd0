// Writing CSV fields: every CSV collsim writes (results, summaries, collsim-cuda measurements)
// quotes text the same way, so one reader (RFC 4180) reads them all.
#pragma once

#include <string>
#include <string_view>

namespace collsim {

/// `text` as one CSV field: unchanged unless it holds a comma, a double quote or a line break;
/// then in double quotes with each quote doubled (RFC 4180).
std::string csv_field(std::string_view text);

}  // namespace collsim
