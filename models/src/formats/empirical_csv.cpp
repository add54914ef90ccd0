// Reader for files of observed delays (one number per line, or one column of a table).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "collsim/models/distribution.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/formats/text_file.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/units.hpp"
#include "text.hpp"

namespace collsim {
namespace {

using text::trim;

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  while (true) {
    const auto comma = line.find(',');
    std::string_view field = trim(line.substr(0, comma));
    if (field.size() >= 2 && field.front() == '"' && field.back() == '"') {
      field = trim(field.substr(1, field.size() - 2));
    }
    fields.push_back(field);
    if (comma == std::string_view::npos) break;
    line.remove_prefix(comma + 1);
  }
  return fields;
}

// A field "looks numeric" when it starts with a number; a header never does.
bool starts_with_number(std::string_view field) {
  double value = 0.0;
  const auto result = std::from_chars(field.data(), field.data() + field.size(), value);
  return result.ec == std::errc() && !field.empty();
}

// Unit a column name announces: "delay_ms", "delay (ms)", "delay[us]". Seconds per unit.
std::optional<double> unit_from_header(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, double>, 4> kUnits{
      {{"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"s", 1.0}}};
  for (const auto& [unit, factor] : kUnits) {
    for (const auto& decorated : {fmt::format("_{}", unit), fmt::format("({})", unit),
                                  fmt::format("[{}]", unit)}) {
      if (name.size() >= decorated.size() && name.substr(name.size() - decorated.size()) == decorated) {
        return factor;
      }
    }
  }
  return std::nullopt;
}

double parse_sample(std::string_view field, double bare_unit_s, const std::string& where) {
  double value = 0.0;
  const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (ec != std::errc() || field.empty()) {
    throw ConfigError(fmt::format("{}: '{}' is not a number", where, quote_excerpt(field)));
  }
  const bool bare = trim(std::string_view(ptr, static_cast<std::size_t>(field.data() + field.size() - ptr))).empty();
  if (value < 0.0) throw ConfigError(fmt::format("{}: delay '{}' must not be negative", where, field));
  if (bare) {
    if (!std::isfinite(value)) throw ConfigError(fmt::format("{}: '{}' is not a finite number", where, field));
    // The range of every delay, as parse_duration_s holds a sample with a unit to it.
    if (value * bare_unit_s > kMaxDuration_s) {
      throw ConfigError(fmt::format("{}: delay '{}' is longer than {} s (the supported range is 0 to 1 hour)", where,
                                    quote_excerpt(field), kMaxDuration_s));
    }
    return value * bare_unit_s;
  }
  return parse_duration_s(field, where);
}

}  // namespace

std::vector<double> read_delay_samples_csv(const std::filesystem::path& file, std::string_view column,
                                           std::optional<double> unit_s) {
  const std::string contents = read_text_file(file, "delay samples file", kDataFileMaxBytes);
  std::istringstream in{std::string(text::without_byte_order_mark(contents))};

  std::vector<double> samples;
  std::optional<std::size_t> column_index;  // fixed by the header, or by the first data line
  std::size_t expected_fields = 0;
  double bare_unit_s = unit_s.value_or(1.0);
  bool first = true;
  std::string line;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    const std::string_view text = trim(line);
    if (text.empty() || text.front() == '#') continue;
    const auto fields = split_fields(text);
    const std::string where = fmt::format("{}:{}", file.string(), line_no);
    const bool is_header = first && !std::all_of(fields.begin(), fields.end(), starts_with_number);
    if (first) {
      first = false;
      expected_fields = fields.size();
      if (is_header) {
        if (column.empty()) {
          if (fields.size() != 1) {
            throw ConfigError(fmt::format(
                "{}: the file has {} columns; name the one holding the delays (column: ...)", where,
                fields.size()));
          }
          column_index = 0;
        } else {
          for (std::size_t i = 0; i < fields.size(); ++i) {
            if (fields[i] != column) continue;
            // Two columns of one name: which one holds the delays is a guess either way.
            if (column_index) {
              throw ConfigError(fmt::format("{}: the header '{}' has two columns named '{}' (columns {} and {})", where,
                                            quote_excerpt(text), column, *column_index + 1, i + 1));
            }
            column_index = i;
          }
          if (!column_index) {
            throw ConfigError(fmt::format("{}: no column named '{}' in the header '{}'", where, column, quote_excerpt(text)));
          }
        }
        if (!unit_s) bare_unit_s = unit_from_header(fields[*column_index]).value_or(1.0);
        continue;
      }
      if (!column.empty()) {
        throw ConfigError(fmt::format("{}: column '{}' was requested but the file has no header line",
                                      where, column));
      }
      if (fields.size() != 1) {
        throw ConfigError(fmt::format(
            "{}: line has {} fields; without a header the file must have exactly one column", where,
            fields.size()));
      }
      column_index = 0;
    }
    if (fields.size() != expected_fields) {
      throw ConfigError(fmt::format("{}: line has {} fields, the first line had {}", where, fields.size(),
                                    expected_fields));
    }
    samples.push_back(parse_sample(fields[*column_index], bare_unit_s, where));
  }
  if (samples.empty()) {
    throw ConfigError(fmt::format("delay samples file '{}' holds no samples", file.string()));
  }
  return samples;
}

}  // namespace collsim
