#include "collsim/models/units.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "collsim/models/error.hpp"

namespace collsim {
namespace {

TEST(Units, Durations) {
  EXPECT_DOUBLE_EQ(parse_duration_s("3us"), 3e-6);
  EXPECT_DOUBLE_EQ(parse_duration_s("5 ms"), 5e-3);
  EXPECT_DOUBLE_EQ(parse_duration_s("0.5s"), 0.5);
  EXPECT_DOUBLE_EQ(parse_duration_s("250ns"), 250e-9);
  EXPECT_DOUBLE_EQ(parse_duration_s("2min"), 120.0);
  EXPECT_DOUBLE_EQ(parse_duration_s("0"), 0.0);
  EXPECT_DOUBLE_EQ(parse_duration_s("2", "latency_s", BareNumber::BaseUnit), 2.0);
  // A negative zero is zero, not a sign that reaches the output as "-0.0 ns".
  EXPECT_FALSE(std::signbit(parse_duration_s("-0ms")));
  EXPECT_FALSE(std::signbit(parse_duration_s("-0")));
  EXPECT_FALSE(std::signbit(parse_size_bytes("-0B")));
}

// What is wrong is said: "-1" was told to take a unit ("e.g. -1ms", refused next), and "1e400s"
// was "not a duration".
TEST(Units, NegativeBareNumbersAndOverflowAreNamed) {
  const auto message = [](auto parse) {
    try {
      parse();
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message([] { parse_duration_s("-1", "--delay"); }), "--delay: '-1' must not be negative");
  EXPECT_EQ(message([] { parse_size_bytes("-5", "--size"); }), "--size: '-5' must not be negative");
  EXPECT_EQ(message([] { parse_duration_s("1e400s", "--delay"); }), "--delay: '1e400s' is out of range for a duration");
  EXPECT_EQ(message([] { parse_duration_s("5", "--delay"); }), "--delay: '5' needs a unit (e.g. 5ms)");
}

TEST(Units, Sizes) {
  EXPECT_DOUBLE_EQ(parse_size_bytes("1GiB"), 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_size_bytes("256 KiB"), 262144.0);
  EXPECT_DOUBLE_EQ(parse_size_bytes("4MB"), 4e6);
  EXPECT_DOUBLE_EQ(parse_size_bytes("100B"), 100.0);
  EXPECT_DOUBLE_EQ(parse_size_bytes("1e3B"), 1000.0);
  EXPECT_DOUBLE_EQ(parse_size_bytes("1.5KiB"), 1536.0);
  EXPECT_DOUBLE_EQ(parse_size_bytes("0"), 0.0);
}

TEST(Units, Bandwidths) {
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("450GBps"), 450e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("450GiBps"), 450.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("400Gbps"), 50e9);
}

TEST(Units, BadInputNamesKeyAndValue) {
  try {
    parse_duration_s("-3us", "--delay");
    FAIL() << "negative delay accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--delay"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("-3us"), std::string::npos);
  }
  EXPECT_THROW(parse_size_bytes("-1GiB"), ConfigError);
  EXPECT_THROW(parse_size_bytes("1 GiBs"), ConfigError);
  EXPECT_THROW(parse_size_bytes("lots"), ConfigError);
  EXPECT_THROW(parse_size_bytes(""), ConfigError);
  EXPECT_THROW(parse_bandwidth_Bps("0GBps"), ConfigError);
  EXPECT_THROW(parse_duration_s("3 parsecs"), ConfigError);
  EXPECT_THROW(parse_duration_s("nan"), ConfigError);
}

// Issue 10 §5.5: a non-zero value needs its unit, sizes are whole bytes, and values outside the
// documented range are errors naming the value.
TEST(Units, UnitsRequiredWholeBytesAndSaneRange) {
  const auto message = [](auto fn) {
    try {
      fn();
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { parse_bandwidth_Bps("450", "--bandwidth"); }).find("--bandwidth: '450' needs a unit (e.g. 450GBps)"),
            std::string::npos);
  EXPECT_NE(message([] { parse_duration_s("5", "--delay"); }).find("needs a unit"), std::string::npos);
  EXPECT_NE(message([] { parse_size_bytes("1048576", "--size"); }).find("needs a unit"), std::string::npos);
  EXPECT_NE(message([] { parse_size_bytes("1.5B", "--size"); }).find("not a whole number of bytes"), std::string::npos);
  // With its digits: "1.000001B is 1 bytes, not a whole number" read as a contradiction.
  EXPECT_NE(message([] { parse_size_bytes("1.000001B", "--size"); }).find("is 1.000001 bytes"), std::string::npos);
  EXPECT_NE(message([] { parse_duration_s("1e300s", "--delay"); }).find("longer than 3600 s"), std::string::npos);
  EXPECT_NE(message([] { parse_duration_s("1e10s", "--delay"); }).find("'1e10s'"), std::string::npos);
  EXPECT_NE(message([] { parse_size_bytes("2TiB", "--size"); }).find("larger than 1 TiB"), std::string::npos);
  EXPECT_NE(message([] { parse_bandwidth_Bps("1Bps"); }).find("1 KBps to 1 PBps"), std::string::npos);
  EXPECT_NE(message([] { parse_bandwidth_Bps("2000TBps"); }).find("1 KBps to 1 PBps"), std::string::npos);
  // The limit is given in a unit the parser takes.
  EXPECT_EQ(parse_bandwidth_Bps("1PBps"), 1e15);
  EXPECT_NE(message([] { parse_bandwidth_Bps("1.5PBps"); }).find("1 KBps to 1 PBps"), std::string::npos);
  EXPECT_DOUBLE_EQ(parse_duration_s("60min"), 3600.0);
  EXPECT_DOUBLE_EQ(parse_size_bytes("1TiB"), kMaxSize_bytes);
}

TEST(Units, Formatting) {
  EXPECT_EQ(format_size(1073741824.0), "1 GiB");
  EXPECT_EQ(format_size(100.0), "100 B");
  EXPECT_EQ(format_duration(3e-6), "3.000 us");
  EXPECT_EQ(format_duration(9.46e-3), "9.460 ms");
  EXPECT_EQ(format_duration(0.0), "0.0 ns");
  EXPECT_EQ(format_duration(2.5e-9), "2.5 ns");
  // Not "0.0 ns": an error quoting a tiny non-zero value named a zero.
  EXPECT_EQ(format_duration(1e-12), "0.001 ns");
}

}  // namespace
}  // namespace collsim
