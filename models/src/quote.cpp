#include "collsim/models/quote.hpp"

namespace collsim {
namespace {

constexpr std::string_view kEllipsis = "...";

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

// Cuts `text` to `max_chars` bytes without splitting a UTF-8 sequence, replacing control bytes.
std::string sanitize(std::string_view text, std::size_t max_chars) {
  const bool cut = text.size() > max_chars;
  std::size_t keep = cut ? (max_chars > kEllipsis.size() ? max_chars - kEllipsis.size() : 0) : text.size();
  // Back up to the start of a UTF-8 sequence (continuation bytes are 10xxxxxx).
  while (cut && keep > 0 && keep < text.size() && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  std::string out;
  out.reserve(keep + kEllipsis.size());
  for (std::size_t i = 0; i < keep; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out.push_back(is_control(c) ? '?' : static_cast<char>(c));
  }
  if (cut) out.append(kEllipsis);
  return out;
}

}  // namespace

std::string quote_excerpt(std::string_view text, std::size_t max_chars) { return sanitize(text, max_chars); }

std::string one_line_message(std::string_view message, std::size_t max_chars) { return sanitize(message, max_chars); }

}  // namespace collsim
