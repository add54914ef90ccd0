#include "collsim/models/units.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

#include "collsim/models/error.hpp"
#include "collsim/models/quote.hpp"
#include "text.hpp"

namespace collsim {
namespace {

struct Suffix {
  std::string_view name;
  double factor;
};

using text::trim;

// Splits "12.5 GiB" into the number and the suffix and looks the suffix up in `table`.
// The empty suffix means the SI base unit.
template <std::size_t N>
double parse_with_suffix(std::string_view text, std::string_view what, std::string_view kind,
                         const std::array<Suffix, N>& table, BareNumber bare, std::string_view example) {
  const std::string_view trimmed = trim(text);
  double value = 0.0;
  const char* begin = trimmed.data();
  const char* end = trimmed.data() + trimmed.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec == std::errc::result_out_of_range) {
    throw ConfigError(fmt::format("{}: '{}' is out of range for a {}", what, quote_excerpt(text), kind));
  }
  if (ec != std::errc() || trimmed.empty()) {
    throw ConfigError(fmt::format("{}: '{}' is not a {} (expected a number with an optional unit)",
                                  what, quote_excerpt(text), kind));
  }
  const std::string_view suffix = trim(std::string_view(ptr, static_cast<std::size_t>(end - ptr)));
  if (!std::isfinite(value)) {
    throw ConfigError(fmt::format("{}: '{}' is not a finite {}", what, quote_excerpt(text), kind));
  }
  // "-0ms" is zero: without this its sign reached the output ("constant(-0.0 ns)").
  if (value == 0.0) value = 0.0;
  if (suffix.empty()) {
    if (bare == BareNumber::Rejected && value < 0.0) {
      // "needs a unit (e.g. -1ms)" suggested a value that is refused next.
      throw ConfigError(fmt::format("{}: '{}' must not be negative", what, quote_excerpt(text)));
    }
    if (bare == BareNumber::Rejected && value != 0.0) {
      throw ConfigError(fmt::format("{}: '{}' needs a unit (e.g. {}{})", what, quote_excerpt(text), quote_excerpt(trimmed), example));
    }
    return value;
  }
  for (const auto& entry : table) {
    if (entry.name == suffix) return value * entry.factor;
  }
  std::string known;
  for (const auto& entry : table) known += fmt::format("{}{}", known.empty() ? "" : ", ", entry.name);
  throw ConfigError(fmt::format("{}: unknown unit '{}' in '{}' (known units: {})", what,
                                quote_excerpt(suffix), quote_excerpt(text), known));
}

// Durations and times per byte: the same units and range; `example` is the unit suggested for a
// bare number.
double parse_time_s(std::string_view text, std::string_view what, BareNumber bare, std::string_view example) {
  static constexpr std::array<Suffix, 5> kTable{{
      {"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"min", 60.0}}};
  const double seconds = parse_with_suffix(text, what, "duration", kTable, bare, example);
  if (seconds < 0) {
    throw ConfigError(fmt::format("{}: duration '{}' must not be negative", what, quote_excerpt(text)));
  }
  if (seconds > kMaxDuration_s) {
    throw ConfigError(fmt::format("{}: duration '{}' is longer than {:g} s (the supported range is 0 to 1 hour)",
                                  what, text, kMaxDuration_s));
  }
  return seconds;
}

}  // namespace

double parse_duration_s(std::string_view text, std::string_view what, BareNumber bare) {
  return parse_time_s(text, what, bare, "ms");
}

double parse_s_per_byte(std::string_view text, std::string_view what) {
  const double gamma = parse_time_s(text, what, BareNumber::Rejected, "s");
  if (gamma > kMaxGamma_s_per_byte) {
    throw ConfigError(fmt::format("{}: '{}' per byte is above the supported {:g} s (a reduction slower than 1 KB/s)", what,
                                  quote_excerpt(text), kMaxGamma_s_per_byte));
  }
  return gamma;
}

double parse_size_bytes(std::string_view text, std::string_view what, BareNumber bare) {
  static constexpr std::array<Suffix, 9> kTable{{{"B", 1.0},
                                                 {"KiB", 1024.0},
                                                 {"MiB", 1024.0 * 1024},
                                                 {"GiB", 1024.0 * 1024 * 1024},
                                                 {"TiB", 1024.0 * 1024 * 1024 * 1024},
                                                 {"KB", 1e3},
                                                 {"MB", 1e6},
                                                 {"GB", 1e9},
                                                 {"TB", 1e12}}};
  const double bytes = parse_with_suffix(text, what, "size", kTable, bare, "MiB");
  if (bytes < 0) throw ConfigError(fmt::format("{}: size '{}' must not be negative", what, quote_excerpt(text)));
  if (bytes > kMaxSize_bytes) {
    throw ConfigError(
        fmt::format("{}: size '{}' is larger than 1 TiB (the largest size collsim accepts)", what, quote_excerpt(text)));
  }
  if (bytes != std::floor(bytes)) {
    throw ConfigError(
        fmt::format("{}: size '{}' is {:.12g} bytes, not a whole number of bytes", what, quote_excerpt(text), bytes));
  }
  return bytes;
}

double parse_bandwidth_Bps(std::string_view text, std::string_view what, BareNumber bare) {
  static constexpr std::array<Suffix, 10> kTable{{{"Bps", 1.0},
                                                 {"KBps", 1e3},
                                                 {"MBps", 1e6},
                                                 {"GBps", 1e9},
                                                 {"TBps", 1e12},
                                                 {"PBps", 1e15},  // the upper limit, in the unit its message names
                                                 {"GiBps", 1024.0 * 1024 * 1024},
                                                 {"MiBps", 1024.0 * 1024},
                                                 {"Gbps", 1e9 / 8},
                                                 {"Mbps", 1e6 / 8}}};
  const double bps = parse_with_suffix(text, what, "bandwidth", kTable, bare, "GBps");
  if (bps <= 0) throw ConfigError(fmt::format("{}: bandwidth '{}' must be positive", what, quote_excerpt(text)));
  if (bps < kMinBandwidth_Bps || bps > kMaxBandwidth_Bps) {
    throw ConfigError(fmt::format("{}: bandwidth '{}' is outside the supported range 1 KBps to 1 PBps", what,
                                  quote_excerpt(text)));
  }
  return bps;
}

std::string format_duration(double seconds) {
  const double a = std::fabs(seconds);
  if (a >= 1.0) return fmt::format("{:.3f} s", seconds);
  if (a >= 1e-3) return fmt::format("{:.3f} ms", seconds * 1e3);
  if (a >= 1e-6) return fmt::format("{:.3f} us", seconds * 1e6);
  // A non-zero duration below 0.05 ns must not print as "0.0 ns" (an error about a launch of
  // 1e-12 s then named a zero).
  if (a > 0 && a < 0.05e-9) return fmt::format("{:.3g} ns", seconds * 1e9);
  return fmt::format("{:.1f} ns", seconds * 1e9);
}

std::string format_size(double bytes) {
  static constexpr std::array<std::pair<std::string_view, double>, 4> kUnits{{
      {"TiB", 1024.0 * 1024 * 1024 * 1024}, {"GiB", 1024.0 * 1024 * 1024}, {"MiB", 1024.0 * 1024}, {"KiB", 1024.0}}};
  for (const auto& [name, factor] : kUnits) {
    if (bytes >= factor && std::fmod(bytes, factor) == 0.0) return fmt::format("{:g} {}", bytes / factor, name);
  }
  return fmt::format("{:g} B", bytes);
}

}  // namespace collsim
