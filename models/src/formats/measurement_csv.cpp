#include "collsim/models/formats/measurement_csv.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include "collsim/models/error.hpp"
#include "collsim/models/formats/csv.hpp"
#include "collsim/models/formats/nccl_log.hpp"
#include "collsim/models/formats/text_file.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/units.hpp"
#include "text.hpp"

namespace collsim {
namespace {

using text::trim;

// Splits one CSV record. Quoted fields may hold commas; "" inside quotes is a quote. Returns
// nullopt for an unterminated quote.
std::optional<std::vector<std::string>> split_csv(std::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  if (quoted) return std::nullopt;
  for (auto& f : fields) f = std::string(trim(f));
  return fields;
}

struct Line {
  std::string_view text;
  std::size_t number = 0;
};

std::vector<Line> content_lines(std::string_view text) {
  std::vector<Line> lines;
  std::size_t pos = 0;
  std::size_t number = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++number;
    const std::string_view t = trim(line);
    if (!t.empty() && t.front() != '#') lines.push_back({line, number});
    pos = end + 1;
  }
  return lines;
}

constexpr std::array<std::string_view, 15> kKnownColumns{
    "algorithm",  "n",      "size_bytes", "delay_s",   "straggler",  "iteration",      "time_s",      "algbw_GBps",
    "busbw_GBps", "launch", "nccl_algo",  "nccl_proto", "device",    "driver_version", "nccl_version"};
constexpr std::array<std::string_view, 4> kRequired{"algorithm", "n", "size_bytes", "time_s"};

class RowReader {
 public:
  RowReader(std::string_view source, const Line& line, const std::vector<std::string>& fields,
            const std::map<std::string, std::size_t, std::less<>>& columns)
      : source_(source), line_(line), fields_(fields), columns_(columns) {}

  bool has(std::string_view column) const { return columns_.find(column) != columns_.end(); }

  const std::string& text(std::string_view column) const { return fields_[columns_.find(column)->second]; }

  double number(std::string_view column) const {
    const std::string& field = text(column);
    double value = 0;
    const char* end = field.data() + field.size();
    auto [ptr, ec] = std::from_chars(field.data(), end, value);
    if (field.empty() || ec != std::errc() || ptr != end || !std::isfinite(value)) {
      fail(column, fmt::format("'{}' is not a number", quote_excerpt(field)));
    }
    return value;
  }

  std::int64_t integer(std::string_view column) const {
    const std::string& field = text(column);
    std::int64_t value = 0;
    const char* end = field.data() + field.size();
    auto [ptr, ec] = std::from_chars(field.data(), end, value);
    if (field.empty() || ec != std::errc() || ptr != end) fail(column, fmt::format("'{}' is not an integer", quote_excerpt(field)));
    return value;
  }

  [[noreturn]] void fail(std::string_view column, const std::string& why) const {
    throw ConfigError(fmt::format("{}:{}: column '{}': {}", source_, line_.number, column, why));
  }

 private:
  std::string_view source_;
  const Line& line_;
  const std::vector<std::string>& fields_;
  const std::map<std::string, std::size_t, std::less<>>& columns_;
};

MeasurementRow read_row(const RowReader& r, std::size_t line_number) {
  MeasurementRow row;
  row.line = line_number;
  row.algorithm = r.text("algorithm");
  if (row.algorithm.empty()) r.fail("algorithm", "is empty");
  const std::int64_t n = r.integer("n");
  if (n < 1 || n > (1 << 20)) r.fail("n", fmt::format("{} is outside 1..{}", n, 1 << 20));
  row.n = static_cast<std::uint32_t>(n);
  const std::int64_t size = r.integer("size_bytes");
  if (size <= 0) r.fail("size_bytes", fmt::format("{} must be positive", size));
  // The ranges nccl-tests logs are held to: a size collsim can simulate, a time from 1 ns (a
  // 1e-300 s row changed the number of regimes fitted) to the hour.
  if (static_cast<double>(size) > kMaxSize_bytes)
    r.fail("size_bytes", fmt::format("{} is more than 1 TiB per rank", size));
  row.size_bytes = static_cast<std::uint64_t>(size);
  row.time_s = r.number("time_s");
  if (!(row.time_s >= kMinMeasuredTime_s && row.time_s <= kMaxDuration_s)) {
    r.fail("time_s", fmt::format("{:.6g} s is outside 1 ns .. 3600 s (1 hour)", row.time_s));
  }
  if (r.has("delay_s")) {
    row.delay_s = r.number("delay_s");
    if (row.delay_s < 0) r.fail("delay_s", fmt::format("{} must not be negative", row.delay_s));
  }
  if (r.has("straggler")) {
    row.straggler = r.integer("straggler");
    if (row.straggler < -1 || row.straggler >= n) {
      r.fail("straggler", fmt::format("{} is outside -1..{}", row.straggler, n - 1));
    }
  }
  if (r.has("iteration")) {
    const std::int64_t it = r.integer("iteration");
    if (it < 0) r.fail("iteration", fmt::format("{} must not be negative", it));
    row.iteration = static_cast<std::uint64_t>(it);
  }
  if (r.has("algbw_GBps")) {
    row.algbw_GBps = r.number("algbw_GBps");
    // algbw is size/time by definition (as nccl-tests prints it): a value that is not says the
    // columns are not what they seem. 0 is an unfilled column.
    const double size_bytes = static_cast<double>(row.size_bytes);
    if (row.algbw_GBps != 0 && !algbw_matches(size_bytes, row.time_s, row.algbw_GBps)) {
      const double expected = size_bytes / row.time_s / 1e9;
      r.fail("algbw_GBps",
             fmt::format("{} GB/s does not match size_bytes/time_s = {:.3g} GB/s", row.algbw_GBps, expected));
    }
  }
  if (r.has("busbw_GBps")) row.busbw_GBps = r.number("busbw_GBps");
  if (r.has("launch")) {
    row.launch = r.text("launch");
    if (!row.launch.empty() && row.launch != "gated" && row.launch != "ungated") {
      r.fail("launch", fmt::format("'{}' is neither 'gated' nor 'ungated'", row.launch));
    }
  }
  if (r.has("nccl_algo")) row.nccl_algo = r.text("nccl_algo");
  if (r.has("nccl_proto")) row.nccl_proto = r.text("nccl_proto");
  if (r.has("device")) row.device = r.text("device");
  if (r.has("driver_version")) row.driver_version = r.text("driver_version");
  if (r.has("nccl_version")) row.nccl_version = r.text("nccl_version");
  return row;
}

}  // namespace

std::string format_measurement_csv_row(const MeasurementRow& row) {
  return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", csv_field(row.algorithm), row.n, row.size_bytes,
                     row.delay_s, row.straggler, row.iteration, row.time_s, row.algbw_GBps, row.busbw_GBps,
                     csv_field(row.launch), csv_field(row.nccl_algo), csv_field(row.nccl_proto), csv_field(row.device),
                     csv_field(row.driver_version), csv_field(row.nccl_version));
}

bool looks_like_measurement_csv(std::string_view text) {
  const auto lines = content_lines(text);
  if (lines.empty()) return false;
  const auto fields = split_csv(lines.front().text);
  return fields && fields->size() > 1 && fields->front() == "algorithm";
}

MeasurementCsv parse_measurement_csv(std::string_view text, std::string_view source) {
  const auto lines = content_lines(text);
  if (lines.empty()) throw ConfigError(fmt::format("{}: the file is empty", source));
  const auto header = split_csv(lines.front().text);
  if (!header) throw ConfigError(fmt::format("{}:{}: unterminated quote in the header", source, lines.front().number));
  std::map<std::string, std::size_t, std::less<>> columns;
  for (std::size_t i = 0; i < header->size(); ++i) {
    const std::string& name = (*header)[i];
    if (!columns.emplace(name, i).second) {
      throw ConfigError(fmt::format("{}:{}: column '{}' appears twice in the header", source, lines.front().number, name));
    }
  }
  for (std::string_view required : kRequired) {
    if (columns.find(required) == columns.end()) {
      throw ConfigError(fmt::format("{}:{}: the header has no '{}' column (required: algorithm, n, size_bytes, "
                                    "time_s; known: {})",
                                    source, lines.front().number, required, fmt::join(kKnownColumns, ", ")));
    }
  }
  MeasurementCsv csv;
  csv.source = std::string(source);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto fields = split_csv(lines[i].text);
    if (!fields) throw ConfigError(fmt::format("{}:{}: unterminated quote: '{}'", source, lines[i].number, quote_excerpt(lines[i].text)));
    if (fields->size() != header->size()) {
      throw ConfigError(fmt::format("{}:{}: expected {} fields as in the header, found {}: '{}'", source,
                                    lines[i].number, header->size(), fields->size(), quote_excerpt(trim(lines[i].text))));
    }
    csv.rows.push_back(read_row(RowReader(source, lines[i], *fields, columns), lines[i].number));
  }
  if (csv.rows.empty()) throw ConfigError(fmt::format("{}: the CSV has a header but no data rows", source));
  return csv;
}

MeasurementCsv read_measurement_csv(const std::filesystem::path& path) {
  const std::string text = read_text_file(path, "", kDataFileMaxBytes);
  return parse_measurement_csv(text, path.string());
}

}  // namespace collsim
