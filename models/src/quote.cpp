#include "collsim/models/quote.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

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

// Length of the well-formed UTF-8 sequence starting at text[i] (1 to 4 bytes), or 0 when the
// bytes there are not one: a stray continuation byte, a truncated sequence, an overlong form,
// a UTF-16 surrogate or a code point above U+10FFFF (Table 3-7 of the Unicode Standard).
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
  const unsigned lead = byte(0);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (byte(1) < low || byte(1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (byte(k) < 0x80 || byte(k) > 0xBF) return 0;
  }
  return length;
}

// How `message` shows byte i onwards, and how many bytes that covers. A newline is shown as
// "\n" (the message stays one line); a tab and well-formed UTF-8 ("µs") as they are; any other
// control character (C0, DEL, C1) and every byte that is not UTF-8 as \xNN, so that neither a
// terminal nor a log reader is handed raw bytes of a binary file or an escape sequence.
// A C1 control (U+0080..U+009F, CSI among them) as UTF-8: C2 80..C2 9F.
bool c1_control_at(std::string_view text, std::size_t i) {
  return i + 1 < text.size() && static_cast<unsigned char>(text[i]) == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0;
}

std::pair<std::string, std::size_t> shown(std::string_view message, std::size_t i) {
  const auto c = static_cast<unsigned char>(message[i]);
  if (c == '\n') return {"\\n", 1};
  if (c == '\t' || (c >= 0x20 && c < 0x7f)) return {std::string(1, static_cast<char>(c)), 1};
  const std::size_t length = utf8_length(message, i);
  const bool c1_control = length == 2 && c1_control_at(message, i);
  if (length >= 2 && !c1_control) return {std::string(message.substr(i, length)), length};
  std::string escaped;
  for (std::size_t k = 0; k < std::max<std::size_t>(length, 1); ++k) {
    escaped += fmt::format("\\x{:02x}", static_cast<unsigned char>(message[i + k]));
  }
  return {escaped, std::max<std::size_t>(length, 1)};
}

}  // namespace

std::string quote_excerpt(std::string_view text, std::size_t max_chars) { return sanitize(text, max_chars); }

bool holds_control_character(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f || c1_control_at(text, i)) return true;
  }
  return false;
}

std::string one_line_message(std::string_view message, std::size_t max_chars) {
  const std::size_t room = max_chars > kEllipsis.size() ? max_chars - kEllipsis.size() : 0;
  std::string out;
  std::size_t cut = std::string::npos;  // where the ellipsis goes if the message is too long
  for (std::size_t i = 0; i < message.size();) {
    const auto [text, bytes] = shown(message, i);
    // Cut between characters and escapes, never inside one.
    if (cut == std::string::npos && out.size() + text.size() > room) cut = out.size();
    out += text;
    i += bytes;
    if (out.size() > max_chars) {
      out.resize(cut);
      return out + std::string(kEllipsis);
    }
  }
  return out;
}

}  // namespace collsim
