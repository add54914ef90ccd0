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

}  // namespace
}  // namespace collsim
