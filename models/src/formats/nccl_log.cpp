#include "collsim/models/formats/nccl_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "collsim/models/error.hpp"
#include "collsim/models/formats/text_file.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/units.hpp"
#include "text.hpp"

namespace collsim {
namespace {

using text::trim;

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> tokens;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const std::size_t begin = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > begin) tokens.push_back(s.substr(begin, i - begin));
  }
  return tokens;
}

bool is_uint(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A decimal number as written, signed or with a fraction or exponent ("-64", "64.5", "1e3"):
// a line that starts with two of them is a table row, even where its size is not a byte count.
bool is_number_text(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  // "inf", "nan", YAML's ".inf": a size no build prints, but a row all the same, refused by its
  // column rather than skipped as a line of other text.
  const std::string word = lower(s.substr(i + (i < s.size() && s[i] == '.' ? 1 : 0)));
  if (word == "inf" || word == "infinity" || word == "nan") return true;
  std::size_t digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    std::size_t exponent = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exponent;
    if (exponent == 0) return false;
  }
  return i == s.size();
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s.front()))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Whole-token number parse; nullopt on any trailing garbage, so "12.5us" is not a number.
std::optional<double> to_double(std::string_view s) {
  double value = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> to_uint(std::string_view s) {
  if (!is_uint(s)) return std::nullopt;
  std::uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

// Whether `s` starts with `shape`, where 'a' stands for a letter, '9' for a digit, '_' for a
// digit or a space, and any other character for itself.
bool starts_with_shape(std::string_view s, std::string_view shape) {
  if (s.size() < shape.size()) return false;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const bool ok = shape[i] == 'a'   ? std::isalpha(c) != 0
                    : shape[i] == '9' ? std::isdigit(c) != 0
                    : shape[i] == '_' ? (std::isdigit(c) != 0 || c == ' ')
                                      : s[i] == shape[i];
    if (!ok) return false;
  }
  return true;
}

// Open MPI's `--tag-output` tag "[1,0]<stdout>:" (or <stderr>), also after the ctime() timestamp
// `--timestamp-output` puts before it ("Mon Jun  2 10:11:12 2025[1,0]<stdout>:"): the rest of the
// line, nullopt when `s` does not start with one.
std::optional<std::string_view> after_open_mpi_tag(std::string_view s) {
  constexpr std::string_view kCtime = "aaa aaa _9 99:99:99 9999";
  if (starts_with_shape(s, kCtime)) s.remove_prefix(kCtime.size());
  if (s.empty() || s.front() != '[') return std::nullopt;
  const std::size_t close = s.find(']');
  if (close == std::string_view::npos) return std::nullopt;
  const std::string_view inside = s.substr(1, close - 1);
  const std::size_t comma = inside.find(',');
  if (comma == std::string_view::npos || !is_uint(inside.substr(0, comma)) || !is_uint(inside.substr(comma + 1))) {
    return std::nullopt;
  }
  const std::string_view rest = s.substr(close + 1);
  for (const std::string_view tag : {std::string_view("<stdout>:"), std::string_view("<stderr>:")}) {
    if (rest.substr(0, tag.size()) == tag) return rest.substr(tag.size());
  }
  return std::nullopt;
}

// Slurm's `srun --label` "0: ": the rest of the line, nullopt when `s` does not start with one.
std::optional<std::string_view> after_srun_label(std::string_view s) {
  std::size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  if (digits > 0 && digits < s.size() && s[digits] == ':' &&
      (digits + 1 == s.size() || std::isspace(static_cast<unsigned char>(s[digits + 1])))) {
    return s.substr(digits + 1);
  }
  return std::nullopt;
}

// The length of a launcher prefix of no fixed form at the start of `s`: MPICH's and Intel MPI's
// `-l` / `-prepend-rank` "[0]", or pdsh's and clush's "host:" (a host name and a colon), either
// followed by white space or the end of the line; 0 when there is none.
std::size_t loose_prefix_length(std::string_view s) {
  std::size_t end = 0;
  if (!s.empty() && s.front() == '[') {
    const std::size_t close = s.find(']');
    if (close == std::string_view::npos || !is_uint(s.substr(1, close - 1))) return 0;
    end = close + 1;
  } else {
    const auto host_char = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
    };
    while (end < s.size() && host_char(s[end])) ++end;
    if (end == 0 || !std::isalnum(static_cast<unsigned char>(s.front())) || end == s.size() || s[end] != ':') return 0;
    ++end;
  }
  if (end < s.size() && !std::isspace(static_cast<unsigned char>(s[end]))) return 0;
  return end;
}

// Whether a comment line's text (after its '#') is one nccl-tests prints: the banner, the start
// line, the parameters, the device list, the column header or the footer.
bool is_nccl_tests_comment(std::string_view body) {
  body = trim(body);
  for (const std::string_view marker : {"nccl-tests version", "Collective test starting", "nThread", "Using devices",
                                        "Rank", "size", "Out of bounds values", "Avg bus bandwidth"}) {
    if (body.substr(0, marker.size()) == marker) return true;
  }
  return false;
}

// Removes the per-line prefixes launchers add. Open MPI's tag and srun's label have a form no
// table line starts with, and are always removed. A loose prefix could also begin a line that is
// not nccl-tests output ("Retries: 2 3" would become a row), so it is learned from a comment line
// ("gpu-n1: # nccl-tests version ...") and removed only from lines that start with a learned one.
// A data row starts with its size, never with a prefix, so none is ever cut.
class LauncherPrefix {
 public:
  std::string_view strip(std::string_view line) {
    std::string_view s = line;
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    if (const auto rest = after_open_mpi_tag(s)) return *rest;
    if (const auto rest = after_srun_label(s)) return *rest;
    const std::size_t length = loose_prefix_length(s);
    if (length == 0) return line;
    const std::string_view prefix = s.substr(0, length);
    const std::string_view rest = trim(s.substr(length));
    if (!rest.empty() && rest.front() == '#') learned_.emplace(prefix);
    return learned_.contains(prefix) ? rest : line;
  }

 private:
  std::set<std::string, std::less<>> learned_;
};

// Where nccl-tests output begins in a line behind a prefix, npos when it does not: its comment
// text ("job 42 | # Collective test starting: ...") or a table row ("job 42 | 1048576 262144
// float ..."). That is how a launcher prefix collsim does not know shows.
std::size_t nccl_text_behind_prefix(std::string_view line) {
  const std::size_t hash = line.find('#');
  if (hash != 0 && hash != std::string_view::npos && is_nccl_tests_comment(line.substr(hash + 1))) return hash;
  const auto tokens = split_ws(line);
  constexpr std::size_t kShortestRow = 11;  // size count type, then time algbw busbw #wrong twice
  for (std::size_t k = 1; k + kShortestRow <= tokens.size(); ++k) {
    if (is_uint(tokens[k]) && is_uint(tokens[k + 1]) && is_identifier(tokens[k + 2])) {
      return static_cast<std::size_t>(tokens[k].data() - line.data());
    }
  }
  return std::string_view::npos;
}

// The collective an nccl-tests binary measures: "all_reduce_perf", or with the suffix a build
// appends through NAME_SUFFIX ("all_reduce_perf_mpi"); a path before the name is ignored.
// nullopt for any other name, including words that only begin like one ("all_reduce_performance").
std::optional<Collective> perf_binary_collective(std::string_view name) {
  if (const std::size_t slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  const std::size_t at = name.find("_perf");
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view suffix = name.substr(at + 5);
  if (!suffix.empty() && std::isalpha(static_cast<unsigned char>(suffix.front()))) return std::nullopt;
  for (const Collective c : kCollectives) {
    if (name.substr(0, at) == collective_name(c)) return c;
  }
  return std::nullopt;
}

// The identifiers of a comment line that name nccl-tests binaries: those ending in "_perf", and
// the supported ones with a NAME_SUFFIX. Other words with "_perf" inside are not binaries.
std::vector<std::string> perf_names(std::string_view text) {
  std::vector<std::string> names;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && !(std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
    const std::size_t begin = i;
    while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
    const std::string_view word = text.substr(begin, i - begin);
    const bool ends_in_perf = word.size() > 5 && word.substr(word.size() - 5) == "_perf";
    if (ends_in_perf || perf_binary_collective(word)) names.emplace_back(word);
  }
  return names;
}

// The number after `key` in a header line, as in "nranks: 8", "nranks=8" or "nThread 1".
std::optional<std::uint64_t> field_after(std::string_view text, std::string_view key) {
  const std::string haystack = lower(text);
  const std::string needle = lower(key);
  std::size_t pos = 0;
  while ((pos = haystack.find(needle, pos)) != std::string::npos) {
    const bool starts_word =
        pos == 0 || !(std::isalnum(static_cast<unsigned char>(haystack[pos - 1])) || haystack[pos - 1] == '_');
    std::size_t i = pos + needle.size();
    pos = i;
    if (!starts_word) continue;
    while (i < haystack.size() && (haystack[i] == ' ' || haystack[i] == ':' || haystack[i] == '=')) ++i;
    std::size_t end = i;
    while (end < haystack.size() && std::isdigit(static_cast<unsigned char>(haystack[end]))) ++end;
    if (end > i) return to_uint(std::string_view(haystack).substr(i, end - i));
  }
  return std::nullopt;
}

// Where a row's columns are, as indices of its whitespace-separated tokens: from the column
// header line, or from the row's own token count in a log without one.
struct Layout {
  bool known = false;     ///< a header line was seen
  std::size_t line = 0;   ///< its line number
  bool has_redop = true;
  bool has_root = true;
  struct Half {
    std::size_t time, algbw, busbw, wrong;
    bool wrong_is_count = true;  ///< "#wrong"; false for old builds' "error"
  };
  std::array<Half, 2> halves{};  ///< out-of-place, in-place
  std::size_t width = 0;         ///< tokens in a row
};

// The columns every nccl-tests build prints, and no opt-in one: size count type [redop] [root],
// then time algbw busbw #wrong out of place and in place.
Layout plain_layout(bool has_redop, bool has_root) {
  Layout layout;
  layout.has_redop = has_redop;
  layout.has_root = has_root;
  const std::size_t lead = 3 + (has_redop ? 1 : 0) + (has_root ? 1 : 0);
  layout.halves = {{{lead, lead + 1, lead + 2, lead + 3}, {lead + 4, lead + 5, lead + 6, lead + 7}}};
  layout.width = lead + 8;
  return layout;
}

bool is_time_column(std::string_view name) { return name == "time" || name == "cputime"; }

// Whether header tokens k.. name one half of the table: time (cputime with -C 1), algbw, busbw,
// and #wrong ("error" in old builds).
bool starts_half(const std::vector<std::string_view>& tokens, std::size_t k) {
  return k + 3 < tokens.size() && is_time_column(tokens[k]) && tokens[k + 1] == "algbw" &&
         tokens[k + 2] == "busbw" && (tokens[k + 3] == "#wrong" || tokens[k + 3] == "error");
}

// Tokens a column the header names takes in a row: the timestamp of -S 1 is printed as
// "%Y-%m-%d %H:%M:%S", two; every other column one.
std::size_t column_tokens(std::string_view name) { return name == "timestamp" ? 2 : 1; }

// Half a unit in the last digit nccl-tests prints of a bandwidth: two decimals below 1000 GB/s,
// one below 10000, none above (getFloatStr in its util.cu). Older builds print two decimals
// always; the wider rounding is taken, so a ratio is never believed more precise than it is.
double printed_half_unit(double value) {
  if (value < 1000) return 0.005;
  if (value < 10000) return 0.05;
  return 0.5;
}

// The n whose bus factor is `ratio` (2(n-1)/n for all_reduce, (n-1)/n for reduce_scatter and
// all_gather); infinite at and past the factor's limit.
double ranks_for_ratio(Collective collective, double ratio) {
  const double limit = collective == Collective::AllReduce ? 2.0 : 1.0;
  return ratio >= limit ? std::numeric_limits<double>::infinity() : limit / (limit - ratio);
}

// The first and last n whose bus factor lies within the rounding of busbw/algbw as printed
// (first > last when none does). Above ~100 ranks neighbouring n differ by less than that
// rounding, and the ratio alone cannot say which ran.
std::pair<std::uint64_t, std::uint64_t> ranks_within_rounding(Collective collective, double algbw, double busbw) {
  const double low = (busbw - printed_half_unit(busbw)) / (algbw + printed_half_unit(algbw));
  const double high = (busbw + printed_half_unit(busbw)) / (algbw - printed_half_unit(algbw));
  constexpr double kPastMaxRanks = (1u << 20) + 1;  // stands for every n from there up
  const double first = std::max(2.0, std::ceil(ranks_for_ratio(collective, low) - 1e-9));
  const double last = std::min(kPastMaxRanks, std::floor(ranks_for_ratio(collective, high) + 1e-9));
  if (first > last) return {1, 0};
  return {static_cast<std::uint64_t>(first), static_cast<std::uint64_t>(last)};
}

// Bytes per element of the types nccl-tests names in its 'type' column (test_typenames in its
// common.cu); nullopt for any other name, which is then not checked against the size.
std::optional<std::uint64_t> nccl_type_bytes(std::string_view type) {
  constexpr std::array<std::pair<std::string_view, std::uint64_t>, 12> kWidths{{{"int8", 1},
                                                                                {"uint8", 1},
                                                                                {"int32", 4},
                                                                                {"uint32", 4},
                                                                                {"int64", 8},
                                                                                {"uint64", 8},
                                                                                {"half", 2},
                                                                                {"float", 4},
                                                                                {"double", 8},
                                                                                {"bfloat16", 2},
                                                                                {"f8e4m3", 1},
                                                                                {"f8e5m2", 1}}};
  for (const auto& [name, bytes] : kWidths) {
    if (name == type) return bytes;
  }
  return std::nullopt;
}

class Parser {
 public:
  Parser(std::string_view source, const NcclLogOptions& options) : source_(source), options_(options) {
    log_.source = std::string(source);
  }

  NcclLog parse(std::string_view text) {
    if (trim(text).empty()) throw ConfigError(fmt::format("{}: the file is empty", source_));
    std::size_t line_no = 0;
    std::size_t pos = 0;
    while (pos <= text.size()) {
      std::size_t end = text.find('\n', pos);
      if (end == std::string_view::npos) end = text.size();
      std::string_view raw = text.substr(pos, end - pos);
      if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
      ++line_no;
      handle_line(raw, line_no);
      if (end == text.size()) break;
      pos = end + 1;
    }
    if (log_.rows.empty()) {
      throw ConfigError(fmt::format(
          "{}: no nccl-tests data rows with size > 0 found ({} lines, {} size-0 rows); expected "
          "rows like '1048576 262144 float sum -1 27.37 38.31 67.04 0 26.93 38.94 68.14 0'{}",
          source_, line_no, log_.zero_size_rows, unknown_prefix_hint()));
    }
    resolve_collective();
    resolve_nranks();
    check_sizes_against_counts();
    check_bus_bandwidths();
    return std::move(log_);
  }

 private:
  [[noreturn]] void row_error(std::size_t line_no, std::string_view text, const std::string& why) const {
    throw ConfigError(fmt::format("{}:{}: malformed nccl-tests data row ({}): '{}'", source_, line_no,
                                  why, quote_excerpt(trim(text))));
  }

  // `NCCL_ALGO=Ring` or "NCCL_ALGO set by environment to Ring" anywhere in a line (a header, a
  // command line, NCCL's INFO output). Two different values in one log are an error: which one
  // ran is then unknown.
  void find_setting(std::string_view line, std::string_view name, std::string& value, std::size_t& value_line,
                    std::size_t line_no) const {
    const std::size_t at = line.find(name);
    if (at == std::string_view::npos) return;
    std::string_view rest = line.substr(at + name.size());
    const std::string_view by_env = " set by environment to ";
    if (rest.substr(0, by_env.size()) == by_env) {
      rest.remove_prefix(by_env.size());
    } else {
      rest = trim(rest);
      if (rest.empty() || rest.front() != '=') return;
      rest = trim(rest.substr(1));
    }
    // A quoted value is the text inside the quotes: the per-collective form holds ';' and is
    // always quoted in a shell (NCCL_ALGO="allreduce:tree;allgather:ring"); it read as empty.
    std::size_t end = rest.find_first_of(" \t\"'");
    if (!rest.empty() && (rest.front() == '"' || rest.front() == '\'')) {
      const std::size_t close = rest.find(rest.front(), 1);
      rest = rest.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1);
      end = std::string_view::npos;
    }
    std::string found(rest.substr(0, end));
    if (found.empty()) return;
    if (!value.empty() && value != found) {
      throw ConfigError(fmt::format("{}:{}: {} = '{}' here but '{}' on line {}: which one ran is unknown", source_,
                                    line_no, name, quote_excerpt(found), quote_excerpt(value), value_line));
    }
    value = std::move(found);
    value_line = line_no;
  }

  void handle_line(std::string_view raw, std::size_t line_no) {
    const std::string_view line = trim(prefix_.strip(raw));
    if (line.empty()) return;
    find_setting(line, "NCCL_ALGO", log_.nccl_algo, log_.nccl_algo_line, line_no);
    find_setting(line, "NCCL_PROTO", log_.nccl_proto, log_.nccl_proto_line, line_no);
    if (line.front() == '#') {
      handle_comment(line.substr(1), line_no);
      return;
    }
    const auto tokens = split_ws(line);
    // Rows are told by their numbers, not by whether they are valid: a size of -64 or 64.5 is a
    // row to refuse, not a banner line to skip (the row used to vanish from the fit unseen).
    // Under a header, a line that starts with a size and is as wide as the header's rows is a
    // row too, whatever its other tokens: "64  x  float ..." vanished from the fit unseen.
    const bool looks_like_row =
        tokens.size() == 1 ? is_uint(tokens[0])
                           : (is_number_text(tokens[0]) && is_number_text(tokens[1])) ||
                                 (layout_.known && tokens.size() == layout_.width && is_uint(tokens[0]));
    if (!looks_like_row) {
      ++log_.skipped_lines;
      note_unknown_prefix(line, line_no);
      return;
    }
    parse_row(tokens, line, line_no);
  }

  void note_unknown_prefix(std::string_view line, std::size_t line_no) {
    const std::size_t at = nccl_text_behind_prefix(line);
    if (at == std::string_view::npos) return;
    if (unknown_prefix_lines_++ == 0) unknown_prefix_ = {line_no, std::string(trim(line.substr(0, at)))};
  }

  // For the "no data rows" error: lines of nccl-tests text behind a prefix not removed say why.
  std::string unknown_prefix_hint() const {
    if (unknown_prefix_lines_ == 0) return "";
    return fmt::format("; {} lines carry nccl-tests text behind a per-line prefix collsim does not know (first on "
                       "line {}: '{}'): remove it from every line",
                       unknown_prefix_lines_, unknown_prefix_.first, quote_excerpt(unknown_prefix_.second));
  }

  void handle_comment(std::string_view body, std::size_t line_no) {
    const auto tokens = split_ws(body);
    if (tokens.empty()) return;
    const bool has_time = std::any_of(tokens.begin(), tokens.end(), is_time_column);
    if (tokens[0] == "size" && tokens.size() > 1 && tokens[1] == "count" && has_time) {
      const Layout layout = header_layout(tokens, body, line_no);
      if (layout_.known) second_table(line_no);
      layout_ = layout;
      return;
    }
    if (tokens[0] == "Rank" && tokens.size() > 1 && is_uint(tokens[1])) {
      if (const auto rank = to_uint(tokens[1])) max_rank_ = std::max<std::int64_t>(max_rank_, static_cast<std::int64_t>(*rank));
    }
    if (body.find("nccl-tests version") != std::string_view::npos) banner_line_ = line_no;
    const std::string_view starting = "Collective test starting:";
    if (const std::size_t at = body.find(starting); at != std::string_view::npos) {
      const auto rest = split_ws(body.substr(at + starting.size()));
      if (!rest.empty()) test_starts(std::string(rest[0]), line_no);
    }
    for (auto& name : perf_names(body)) mentioned_.insert(std::move(name));
    if (!nranks_field_) {
      if (auto v = field_after(body, "nranks")) nranks_field_ = v;
    }
    if (auto v = field_after(body, "nThread")) nthread_ = v;
    if (auto v = field_after(body, "nGpus")) ngpus_ = v;
    if (body.find("Out of bounds values") != std::string_view::npos && body.find("FAILED") != std::string_view::npos) {
      log_.warnings.push_back(fmt::format("line {}: nccl-tests reports wrong results: '{}'", line_no, quote_excerpt(trim(body))));
    }
  }

  // The column header: "size count type [redop] [root]", then the out-of-place and the in-place
  // half, each possibly followed by opt-in columns (the per-iteration report's i_min i_max i_p99
  // i_cv%, -S 1's timestamp at the end). Columns are taken where the header puts them; the
  // opt-in ones are skipped.
  Layout header_layout(const std::vector<std::string_view>& tokens, std::string_view body, std::size_t line_no) const {
    if (tokens.size() < 3 || tokens[2] != "type") unsupported_layout(body, line_no);
    std::size_t k = 3;
    const bool has_redop = k < tokens.size() && tokens[k] == "redop";
    if (has_redop) ++k;
    const bool has_root = k < tokens.size() && tokens[k] == "root";
    if (has_root) ++k;
    Layout layout = plain_layout(has_redop, has_root);
    layout.known = true;
    layout.line = line_no;
    std::size_t position = k;  // of header token k in a row
    std::size_t halves = 0;
    while (k < tokens.size()) {
      if (halves < 2 && starts_half(tokens, k)) {
        layout.halves[halves++] = {position, position + 1, position + 2, position + 3, tokens[k + 3] == "#wrong"};
        k += 4;
        position += 4;
      } else if (halves == 0) {
        unsupported_layout(body, line_no);  // only redop and root come before the first time column
      } else {
        position += column_tokens(tokens[k]);
        ++k;
      }
    }
    if (halves != 2) unsupported_layout(body, line_no);
    layout.width = position;
    return layout;
  }

  [[noreturn]] void unsupported_layout(std::string_view body, std::size_t line_no) const {
    throw ConfigError(fmt::format("{}:{}: unsupported nccl-tests table layout '{}' (expected 'size count type [redop] "
                                  "[root]', then 'time algbw busbw #wrong' twice, each with optional extra columns)",
                                  source_, line_no, quote_excerpt(trim(body))));
  }

  // One log holds one test. Two runs appended to one file (all_reduce_perf, then all_gather_perf)
  // were read as one table of the last collective with the rows of both; which rows belong to
  // which test only the user can say, by splitting the file.
  void test_starts(std::string name, std::size_t line_no) {
    if (started_) {
      // The second test's output begins at its version banner when it printed one.
      const std::size_t split = banner_line_ > started_->second ? banner_line_ : line_no;
      throw ConfigError(fmt::format("{}:{}: a second nccl-tests test starts here ({}); the first ({}) started on "
                                    "line {}: a log must hold one test, split the file before line {} and pass "
                                    "the parts as separate inputs",
                                    source_, line_no, quote_excerpt(name), quote_excerpt(started_->first),
                                    started_->second, split));
    }
    started_ = std::pair<std::string, std::size_t>(std::move(name), line_no);
  }

  // Old builds print no start line: a second table header is then the sign of a second test.
  [[noreturn]] void second_table(std::size_t line_no) const {
    const std::string first = started_ ? fmt::format(" ({})", quote_excerpt(started_->first)) : "";
    throw ConfigError(fmt::format("{}:{}: a second nccl-tests table header; the first is on line {}{}: a log must "
                                  "hold one test, split the file before line {} and pass the parts as separate "
                                  "inputs",
                                  source_, line_no, layout_.line, first, line_no));
  }

  double number(std::string_view token, std::string_view column, std::size_t line_no, std::string_view text) const {
    const auto value = to_double(token);
    if (!value) row_error(line_no, text, fmt::format("column '{}' is '{}', not a number", column, quote_excerpt(token)));
    if (*value < 0) row_error(line_no, text, fmt::format("column '{}' is negative ({})", column, quote_excerpt(token)));
    return *value;
  }

  std::optional<double> wrong(std::string_view token, std::string_view column, std::size_t line_no,
                              std::string_view text) const {
    if (token == "N/A") return std::nullopt;
    return number(token, column, line_no, text);
  }

  void parse_row(const std::vector<std::string_view>& tokens, std::string_view text, std::size_t line_no) {
    Layout layout = layout_;
    if (!layout.known) {
      // Without a header the column count decides; 12 columns are ambiguous between an old
      // "redop" column and a "root" column, so the token itself decides.
      bool has_redop = true;
      bool has_root = true;
      if (tokens.size() == 11) {
        has_redop = has_root = false;
      } else if (tokens.size() == 12) {
        has_redop = is_identifier(tokens[3]);
        has_root = !has_redop;
      }
      layout = plain_layout(has_redop, has_root);
    }
    if (tokens.size() != layout.width) {
      row_error(line_no, text, fmt::format("expected {} columns, found {}", layout.width, tokens.size()));
    }
    NcclLogRow row;
    row.line = line_no;
    for (std::size_t k = 0; k < 2; ++k) {
      if (!is_uint(tokens[k])) {
        row_error(line_no, text, fmt::format("column '{}' is '{}', not a whole number", k == 0 ? "size" : "count",
                                             quote_excerpt(tokens[k])));
      }
    }
    const auto size = to_uint(tokens[0]);
    const auto count = to_uint(tokens[1]);
    if (!size || !count) row_error(line_no, text, "size or count is out of range");
    row.size_bytes = static_cast<double>(*size);
    row.count = *count;
    if (!is_identifier(tokens[2])) {
      row_error(line_no, text, fmt::format("column 'type' is '{}', not a type name", quote_excerpt(tokens[2])));
    }
    row.type = std::string(tokens[2]);
    std::size_t col = 3;
    if (layout.has_redop) {
      if (!is_identifier(tokens[col])) {
        row_error(line_no, text, fmt::format("column 'redop' is '{}', not an operation name", quote_excerpt(tokens[col])));
      }
      row.redop = std::string(tokens[col]);
      ++col;
    }
    if (layout.has_root) {
      const std::string_view root = tokens[col];
      if (!is_uint(root.front() == '-' ? root.substr(1) : root)) {
        row_error(line_no, text, fmt::format("column 'root' is '{}', not an integer", root));
      }
    }
    const auto& [oop, ip] = layout.halves;
    row.time_oop_s = number(tokens[oop.time], "time (out-of-place)", line_no, text) / 1e6;
    row.algbw_oop_GBps = number(tokens[oop.algbw], "algbw (out-of-place)", line_no, text);
    row.busbw_oop_GBps = number(tokens[oop.busbw], "busbw (out-of-place)", line_no, text);
    row.wrong_oop = wrong(tokens[oop.wrong], "#wrong (out-of-place)", line_no, text);
    row.time_ip_s = number(tokens[ip.time], "time (in-place)", line_no, text) / 1e6;
    row.algbw_ip_GBps = number(tokens[ip.algbw], "algbw (in-place)", line_no, text);
    row.busbw_ip_GBps = number(tokens[ip.busbw], "busbw (in-place)", line_no, text);
    row.wrong_ip = wrong(tokens[ip.wrong], "#wrong (in-place)", line_no, text);
    if (row.size_bytes == 0) {
      ++log_.zero_size_rows;
      return;
    }
    if (row.time_oop_s <= 0 || row.time_ip_s <= 0) {
      row_error(line_no, text, "a row with size > 0 must have positive times");
    }
    // Times past the range of every duration (1 hour) are a typo or a broken log; accepted, a
    // time of 1e308 us was fitted and printed as a 300-digit measurement.
    const std::pair<double, const char*> times[] = {{row.time_oop_s, "time (out-of-place)"},
                                                    {row.time_ip_s, "time (in-place)"}};
    for (const auto& [time_s, column] : times) {
      // Below 1 ns, size/time overflowed and the algbw check passed a 1e-300 us row.
      if (time_s < kMinMeasuredTime_s) {
        row_error(
            line_no, text,
            fmt::format("column '{}' is {:.6g} us, below 1 ns, shorter than any collective", column, time_s * 1e6));
      }
      if (time_s > kMaxDuration_s) {
        row_error(line_no, text,
                  fmt::format("column '{}' is {:.6g} us, more than {} s (1 hour), the longest time collsim takes",
                              column, time_s * 1e6, kMaxDuration_s));
      }
    }
    check_algbw(row.size_bytes, row.time_oop_s, row.algbw_oop_GBps, "out-of-place", line_no, text);
    check_algbw(row.size_bytes, row.time_ip_s, row.algbw_ip_GBps, "in-place", line_no, text);
    // #wrong counts wrong elements: nonzero means wrong results. Old builds' "error" column holds
    // the largest error of the results instead (2e-07 for a float sum is rounding), and how large
    // is too large depends on the type; nccl-tests judges that itself and prints "Out of bounds
    // values : N FAILED", which is warned about, so the value is not checked here.
    const bool wrong_oop = oop.wrong_is_count && row.wrong_oop.value_or(0) > 0;
    const bool wrong_ip = ip.wrong_is_count && row.wrong_ip.value_or(0) > 0;
    if (wrong_oop || wrong_ip) {
      log_.warnings.push_back(fmt::format("line {}: nonzero #wrong (results were wrong; timing kept)", line_no));
    }
    // One row per (size, count, type, op): a repeat (two runs pasted into one file) counted its
    // measurement twice in the fit. Several types or ops (-d all, -o all) are distinct rows.
    const auto [first, inserted] = row_lines_.emplace(std::tuple(row.size_bytes, row.count, row.type, row.redop), line_no);
    if (!inserted) {
      row_error(line_no, text,
                fmt::format("it repeats the size, count, type and op of line {} (two runs in one file? give each its own "
                            "file)",
                            first->second));
    }
    log_.rows.push_back(std::move(row));
  }

  // algbw is printed with two decimals and is S/t by definition; a mismatch means the columns
  // are not what we think (e.g. a time column in milliseconds), which would silently corrupt a fit.
  void check_algbw(double size_bytes, double time_s, double algbw_GBps, std::string_view which,
                   std::size_t line_no, std::string_view text) const {
    if (!algbw_matches(size_bytes, time_s, algbw_GBps)) {
      const double expected = size_bytes / time_s / 1e9;
      row_error(line_no, text,
                fmt::format("{} algbw {} GB/s does not match size/time = {:.3g} GB/s", which, algbw_GBps, expected));
    }
  }

  void resolve_collective() {
    if (options_.collective) {
      log_.collective = *options_.collective;
      log_.collective_from = "option";
      return;
    }
    if (started_) {
      const auto binary = perf_binary_collective(started_->first);
      log_.collective = binary ? *binary
                               : parse_collective(started_->first, fmt::format("{}:{}: collective", source_, started_->second));
      log_.collective_from = "'Collective test starting' header";
      return;
    }
    std::set<Collective> found;
    std::vector<std::string> unsupported;
    for (const auto& name : mentioned_) {
      if (const auto c = perf_binary_collective(name)) {
        found.insert(*c);
      } else {
        unsupported.push_back(name);
      }
    }
    if (found.size() > 1) {
      throw ConfigError(fmt::format("{}: the header names several collectives ({}); pass the collective explicitly",
                                    source_, fmt::join(mentioned_, ", ")));
    }
    if (found.size() == 1) {
      log_.collective = *found.begin();
      log_.collective_from = "command line in the header";
      return;
    }
    if (!unsupported.empty()) {
      throw ConfigError(fmt::format("{}: unsupported nccl-tests binary '{}' (supported: all_reduce_perf, "
                                    "reduce_scatter_perf, all_gather_perf, sendrecv_perf)",
                                    source_, quote_excerpt(unsupported.front())));
    }
    std::string stem = lower(std::filesystem::path(std::string(source_)).filename().string());
    std::erase_if(stem, [](char c) { return c == '_' || c == '-'; });
    constexpr std::array<std::pair<std::string_view, Collective>, 4> kStems{{{"allreduce", Collective::AllReduce},
                                                                            {"reducescatter", Collective::ReduceScatter},
                                                                            {"allgather", Collective::AllGather},
                                                                            {"sendrecv", Collective::SendRecv}}};
    std::set<Collective> by_name;
    for (const auto& [key, collective] : kStems) {
      if (stem.find(key) != std::string::npos) by_name.insert(collective);
    }
    if (by_name.size() == 1) {
      log_.collective = *by_name.begin();
      log_.collective_from = "file name";
      return;
    }
    throw ConfigError(fmt::format("{}: cannot tell which collective this log measured (no 'Collective test "
                                  "starting' line, no *_perf command line, file name not conclusive); "
                                  "pass the collective explicitly",
                                  source_));
  }

  void resolve_nranks() {
    std::optional<std::uint64_t> n;
    if (options_.nranks) {
      n = *options_.nranks;
      log_.nranks_from = "option";
    } else if (nranks_field_) {
      n = nranks_field_;
      log_.nranks_from = "'nranks' header field";
    } else if (max_rank_ >= 0) {
      n = static_cast<std::uint64_t>(max_rank_) + 1;
      log_.nranks_from = "'Rank' device lines";
    } else if (nthread_ && ngpus_ && *nthread_ * *ngpus_ >= 2) {
      n = *nthread_ * *ngpus_;
      log_.nranks_from = "nThread * nGpus";
    }
    // The row with the largest algbw has the most significant digits in busbw/algbw.
    const NcclLogRow* best = nullptr;
    for (const auto& row : log_.rows) {
      if (row.algbw_oop_GBps >= 1.0 && (best == nullptr || row.algbw_oop_GBps > best->algbw_oop_GBps)) best = &row;
    }
    const bool informative = best != nullptr && log_.collective != Collective::SendRecv;
    const double ratio = informative ? best->busbw_oop_GBps / best->algbw_oop_GBps : 0.0;
    const double tolerance = informative ? 0.006 / best->algbw_oop_GBps + 0.006 / best->busbw_oop_GBps + 1e-3 : 0.0;
    if (!n && informative) {
      n = ranks_from_ratio(*best, ratio);
      if (n) {
        log_.nranks_from = "busbw/algbw ratio";
        log_.warnings.push_back(fmt::format("nranks = {} inferred from busbw/algbw = {:.4f}; the header does not say",
                                            *n, ratio));
      }
    }
    if (!n && log_.collective == Collective::SendRecv) {
      n = 2;
      log_.nranks_from = "default for sendrecv";
    }
    if (!n) {
      throw ConfigError(fmt::format("{}: cannot determine the number of ranks (no 'nranks' field, no 'Rank' "
                                    "lines, nThread*nGpus < 2); pass nranks explicitly",
                                    source_));
    }
    if (*n < 2 || *n > (1u << 20)) {
      throw ConfigError(fmt::format("{}: nranks = {} (from {}) is outside 2..{}", source_, *n, log_.nranks_from, 1u << 20));
    }
    if (informative) {
      const double expected = bus_factor(log_.collective, *n);
      if (std::fabs(ratio / expected - 1.0) > tolerance) {
        const std::string message = fmt::format(
            "{}: nranks = {} (from {}) contradicts busbw/algbw = {:.4f} at line {} (expected {:.4f} for {})",
            source_, *n, log_.nranks_from, ratio, best->line, expected, collective_name(log_.collective));
        if (log_.nranks_from != "option") throw ConfigError(message + "; pass nranks explicitly");
        log_.warnings.push_back(message);
      }
    }
    log_.nranks = static_cast<std::uint32_t>(*n);
    // A thread cannot drive more GPUs than take part: such a header is not believed (1 is kept).
    if (ngpus_ && *ngpus_ >= 1 && *ngpus_ <= *n) {
      log_.gpus_per_thread = static_cast<std::uint32_t>(*ngpus_);
    } else if (ngpus_) {
      log_.warnings.push_back(fmt::format("nGpus = {} is outside 1..nranks ({}); GPUs per thread taken as 1", *ngpus_, *n));
    }
  }

  // nccl-tests prints a row's size as its count times the type's width, times nranks where the
  // count is one rank's part (reduce_scatter's output, all_gather's input). A row that breaks this
  // has columns that are not what they seem, and would fit the wrong bytes: an error. Where only
  // nranks disagrees, an nranks the user gave wins with a warning, as against busbw/algbw, and one
  // the log gave is an error. Types this table does not know are not checked.
  void check_sizes_against_counts() {
    const bool count_is_per_rank =
        log_.collective == Collective::ReduceScatter || log_.collective == Collective::AllGather;
    for (const auto& row : log_.rows) {
      const auto width = nccl_type_bytes(row.type);
      if (!width) continue;
      const double element_bytes = static_cast<double>(row.count) * static_cast<double>(*width);
      const double ranks = count_is_per_rank ? log_.nranks : 1.0;
      if (element_bytes * ranks == row.size_bytes) continue;
      const double implied = element_bytes > 0 ? row.size_bytes / element_bytes : 0.0;
      const bool only_nranks_differs = count_is_per_rank && implied >= 2 && implied == std::floor(implied);
      if (!only_nranks_differs) {
        throw ConfigError(fmt::format(
            "{}:{}: malformed nccl-tests data row: size {} is not count {} x {} bytes ({}){}, as nccl-tests prints it "
            "for {}",
            source_, row.line, row.size_bytes, row.count, *width, row.type, count_is_per_rank ? " x nranks" : "",
            collective_name(log_.collective)));
      }
      const std::string message =
          fmt::format("{}:{}: size {} = count {} x {} bytes ({}) x {} ranks, but nranks = {} (from {})", source_,
                      row.line, row.size_bytes, row.count, *width, row.type, implied, log_.nranks, log_.nranks_from);
      if (log_.nranks_from != "option") throw ConfigError(message + "; pass nranks explicitly");
      log_.warnings.push_back(message);
      return;
    }
  }

  // busbw is algbw times the bus factor, both printed rounded (nccl-tests' definition). Only one row
  // decides nranks, so a busbw column broken on another row (9999999999 GB/s) passed unseen. When
  // the user's nranks overrode a contradicting log, that was warned about once, and rows are not
  // checked against it.
  void check_bus_bandwidths() const {
    if (log_.nranks_from == "option") return;
    const double factor = bus_factor(log_.collective, log_.nranks);
    for (const auto& row : log_.rows) {
      const std::pair<double, double> halves[] = {{row.algbw_oop_GBps, row.busbw_oop_GBps},
                                                  {row.algbw_ip_GBps, row.busbw_ip_GBps}};
      for (const auto& [algbw, busbw] : halves) {
        const double expected = algbw * factor;
        const double slack = printed_half_unit(busbw) + factor * printed_half_unit(algbw) + 1e-3 * expected;
        if (std::fabs(busbw - expected) <= slack) continue;
        throw ConfigError(fmt::format(
            "{}:{}: malformed nccl-tests data row: busbw {} GB/s is not algbw {} GB/s x {:.4f}, the bus factor of {} "
            "at nranks = {} (from {})",
            source_, row.line, busbw, algbw, factor, collective_name(log_.collective), log_.nranks, log_.nranks_from));
      }
    }
  }

  // n from busbw/algbw of `best` when only one n fits the printed rounding; a pasted table of 256
  // ranks was taken for 255 (with a warning) and fitted with the wrong schedule. When no n fits,
  // the nearest is returned and resolve_nranks' check reports the contradiction.
  std::optional<std::uint64_t> ranks_from_ratio(const NcclLogRow& best, double ratio) const {
    const auto [first, last] = ranks_within_rounding(log_.collective, best.algbw_oop_GBps, best.busbw_oop_GBps);
    if (first == last) return first;
    if (first < last) {
      throw ConfigError(fmt::format("{}: busbw/algbw = {:.4f} at line {} fits every nranks from {} to {} within the "
                                    "rounding of the printed values, and the log does not say how many ranks ran (no "
                                    "'nranks' field, no 'Rank' lines, nThread*nGpus < 2); pass --nranks N",
                                    source_, ratio, best.line, first, std::min<std::uint64_t>(last, 1u << 20)));
    }
    const double guess = ranks_for_ratio(log_.collective, ratio);
    if (!std::isfinite(guess) || guess < 1.5 || guess >= 1e6) return std::nullopt;
    return static_cast<std::uint64_t>(std::llround(guess));
  }

  std::string_view source_;
  NcclLogOptions options_;
  LauncherPrefix prefix_;
  std::size_t unknown_prefix_lines_ = 0;
  std::pair<std::size_t, std::string> unknown_prefix_;  ///< the first such line and its prefix
  NcclLog log_;
  std::map<std::tuple<double, std::uint64_t, std::string, std::string>, std::size_t> row_lines_;  // -> first line
  Layout layout_;
  std::int64_t max_rank_ = -1;
  std::optional<std::uint64_t> nranks_field_, nthread_, ngpus_;
  std::optional<std::pair<std::string, std::size_t>> started_;
  std::size_t banner_line_ = 0;  ///< the last "# nccl-tests version ..." line
  std::set<std::string> mentioned_;
};

}  // namespace

bool algbw_matches(double size_bytes, double time_s, double algbw_GBps) {
  const double expected = size_bytes / time_s / 1e9;
  return std::fabs(expected - algbw_GBps) <= 0.05 * std::max(expected, algbw_GBps) + 0.011;
}

NcclLog parse_nccl_log(std::string_view text, std::string_view source, const NcclLogOptions& options) {
  if (options.nranks && *options.nranks < 2) {
    throw ConfigError(fmt::format("{}: nranks option {} must be at least 2", source, *options.nranks));
  }
  return Parser(source, options).parse(text);
}


NcclLog read_nccl_log(const std::filesystem::path& path, const NcclLogOptions& options) {
  const std::string text = read_text_file(path, "", kDataFileMaxBytes);
  return parse_nccl_log(text, path.string(), options);
}

}  // namespace collsim
