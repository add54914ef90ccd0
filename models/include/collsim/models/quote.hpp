// Short, safe excerpts of user input for error messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace collsim {

/// At most `max_chars` characters of `text` for an error message to put between quotes: control
/// characters (newlines, escapes, NULs) become '?' and a longer text is cut with "...". Why: an
/// error must stay one readable line, and must not replay a whole file or a 100 KB argument to
/// whoever reads the log.
std::string quote_excerpt(std::string_view text, std::size_t max_chars = 40);

/// True when `text` holds a control character: C0 (newline and tab included), DEL, or C1 as
/// UTF-8. For names that must be one line of printable text (a label, an output file name).
bool holds_control_character(std::string_view text);

/// Excerpt length for a YAML key: keys are short names, and a long "key" is usually the first
/// line of a file that is not YAML at all (a password file given as a topology).
inline constexpr std::size_t kKeyExcerptChars = 20;

/// The message made safe to print and cut to `max_chars` bytes (with "..."): the last guard at
/// the command-line boundary for any message that echoed input without quote_excerpt, or with
/// bytes quote_excerpt keeps. A newline becomes "\n" (one line); a tab and valid UTF-8 ("µs")
/// stay; other control characters and bytes that are not valid UTF-8 become "\xNN" (lower-case
/// hex), so `ring\xff` in a spec is shown as the text `ring\xff`, not a raw byte.
std::string one_line_message(std::string_view message, std::size_t max_chars = 600);

}  // namespace collsim
