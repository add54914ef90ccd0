#include <fmt/format.h>

#include "collsim/models/error.hpp"
#include "collsim/models/link_model.hpp"
#include "collsim/models/quote.hpp"

namespace collsim {

StartMode parse_start_mode(std::string_view text, std::string_view what) {
  for (StartMode mode : {StartMode::Barrier, StartMode::Eager}) {
    if (text == start_mode_name(mode)) return mode;
  }
  throw ConfigError(fmt::format("{}: unknown start mode '{}' (known: barrier, eager)", what, quote_excerpt(text)));
}

ExecutionStyle parse_execution_style(std::string_view text, std::string_view what) {
  for (ExecutionStyle style : {ExecutionStyle::Fused, ExecutionStyle::P2pRounds}) {
    if (text == execution_style_name(style)) return style;
  }
  throw ConfigError(
      fmt::format("{}: unknown execution style '{}' (known: fused, p2p_rounds)", what, quote_excerpt(text)));
}

}  // namespace collsim
