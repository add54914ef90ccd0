#include "collsim/models/quote.hpp"

#include <gtest/gtest.h>

#include <string>

namespace collsim {
namespace {

TEST(QuoteExcerpt, ShortCleanTextIsUnchanged) { EXPECT_EQ(quote_excerpt("5ms"), "5ms"); }

TEST(QuoteExcerpt, ControlCharactersBecomeQuestionMarks) {
  EXPECT_EQ(quote_excerpt("a\nb\x1b[0m\tc"), "a?b?[0m?c");
  EXPECT_EQ(quote_excerpt(std::string("x\0y", 3)), "x?y");
}

TEST(QuoteExcerpt, LongTextIsCutWithAnEllipsis) {
  const std::string cut = quote_excerpt(std::string(100'000, 'z'), 40);
  EXPECT_EQ(cut.size(), 40u);
  EXPECT_EQ(cut.substr(37), "...");
  EXPECT_EQ(quote_excerpt("abcdef", 6), "abcdef");
  EXPECT_EQ(quote_excerpt("abcdefg", 6), "abc...");
}

TEST(QuoteExcerpt, NeverSplitsAUtf8Character) {
  // "é" is two bytes; a cut in its middle would leave an invalid byte in the message.
  const std::string text = "aaaa\xc3\xa9zzzzzzzzzz";
  EXPECT_EQ(quote_excerpt(text, 8), "aaaa...");
}

TEST(OneLineMessage, BoundsAWholeMessage) {
  const std::string long_message = "error: " + std::string(5000, 'q') + "\nsecond line";
  const std::string line = one_line_message(long_message);
  EXPECT_LE(line.size(), 600u);
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

// Bytes that are not UTF-8 (a spec value `ring\xff`) and control characters are shown as \xNN,
// not passed to the terminal; valid UTF-8 and tabs stay, a newline is shown as \n.
TEST(OneLineMessage, EscapesBytesThatAreNotUtf8AndControlCharacters) {
  EXPECT_EQ(one_line_message("unknown algorithm 'ring\xff'"), "unknown algorithm 'ring\\xff'");
  EXPECT_EQ(one_line_message("bad \x1b[31m\x7f\x01"), "bad \\x1b[31m\\x7f\\x01");
  EXPECT_EQ(one_line_message("two\nlines\tand a tab"), "two\\nlines\tand a tab");
  EXPECT_EQ(one_line_message("3 \xC2\xB5s, 5 \xE2\x80\x93 6, \xF0\x9F\x98\x80"), "3 \xC2\xB5s, 5 \xE2\x80\x93 6, \xF0\x9F\x98\x80");
  // Overlong forms, surrogates, truncated sequences, stray continuation bytes and C1 controls.
  EXPECT_EQ(one_line_message("\xC0\xAF|\xED\xA0\x80|\xE2\x82|\x80|\xC2\x9B"),
            "\\xc0\\xaf|\\xed\\xa0\\x80|\\xe2\\x82|\\x80|\\xc2\\x9b");
}

TEST(OneLineMessage, CutsBetweenEscapesAndCharacters) {
  const std::string cut = one_line_message(std::string(10, 'a') + std::string(10, '\xff'), 20);
  EXPECT_EQ(cut, "aaaaaaaaaa\\xff...");  // "\xff" again would pass 20 bytes with the ellipsis
  EXPECT_LE(one_line_message(std::string(1000, '\xff')).size(), 600u);
  EXPECT_EQ(one_line_message(std::string(5, 'a') + "\xC2\xB5", 7), "aaaaa\xC2\xB5");
  EXPECT_EQ(one_line_message(std::string(6, 'a') + "\xC2\xB5", 7), "aaaa...");
}

}  // namespace
}  // namespace collsim
