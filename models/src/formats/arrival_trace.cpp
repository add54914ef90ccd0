#include "collsim/models/formats/arrival_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <charconv>
#include <cmath>
#include <map>
#include <system_error>

#include "collsim/models/error.hpp"
#include "collsim/models/formats/text_file.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/units.hpp"
#include "json_reader.hpp"
#include "text.hpp"

namespace collsim {
namespace {

using text::trim;

// One observed arrival before grouping. `time` is in the file's unit (seconds for CSV,
// microseconds for Inspector): iterations are shifted to their earliest arrival before scaling,
// so epoch timestamps (1.7e15 us) keep their microsecond resolution.
struct Row {
  std::uint64_t iteration = 0;
  std::uint32_t rank = 0;
  double time = 0.0;
  std::size_t line = 0;
};

// A field in double quotes is the text inside them: pandas (QUOTE_ALL) and R's write.csv quote
// the header, R its row names too, and an extra column may hold commas inside its quotes
// ("n1,gpu0"). An escaped quote ("") stays as two: no field this format reads holds one.
std::string_view unquoted(std::string_view field) {
  if (field.size() >= 2 && field.front() == '"' && field.back() == '"') return trim(field.substr(1, field.size() - 2));
  return field;
}

std::vector<std::string_view> split_commas(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  bool quoted = false;
  for (std::size_t i = 0; i <= line.size(); ++i) {
    if (i < line.size() && line[i] == '"') quoted = !quoted;
    if (i == line.size() || (line[i] == ',' && !quoted)) {
      fields.push_back(unquoted(trim(line.substr(start, i - start))));
      start = i + 1;
    }
  }
  return fields;
}

std::uint64_t parse_label(std::string_view field, std::string_view column, const std::string& where) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || ec != std::errc() || end != field.data() + field.size()) {
    throw ConfigError(fmt::format("{}: {} '{}' is not a non-negative integer", where, column, quote_excerpt(field)));
  }
  return value;
}

std::uint32_t checked_rank(std::uint64_t rank, const std::string& where) {
  if (rank > 0xFFFFFFFFull) throw ConfigError(fmt::format("{}: rank {} is too large", where, rank));
  return static_cast<std::uint32_t>(rank);
}

double checked_time(double value, std::string_view shown, std::string_view column, const std::string& where) {
  if (!std::isfinite(value)) throw ConfigError(fmt::format("{}: {} '{}' is not a finite time", where, column, shown));
  if (value < 0.0) throw ConfigError(fmt::format("{}: {} '{}' is negative", where, column, shown));
  return value;
}

std::vector<Row> csv_rows(std::string_view text, std::string_view source) {
  std::vector<Row> rows;
  std::optional<std::array<std::size_t, 3>> columns;  // iteration, rank, arrival_s
  std::size_t expected_fields = 0;
  std::size_t line_no = 0;
  while (!text.empty()) {
    const auto newline = text.find('\n');
    const std::string_view line = trim(text.substr(0, newline));
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const std::string where = fmt::format("{}:{}", source, line_no);
    const auto fields = split_commas(line);
    if (!columns) {
      std::array<std::size_t, 3> index{};
      constexpr std::string_view kNames[] = {"iteration", "rank", "arrival_s"};
      for (std::size_t c = 0; c < 3; ++c) {
        const auto it = std::find(fields.begin(), fields.end(), kNames[c]);
        // Two columns of one name: which one holds the data is a guess.
        if (it != fields.end() && std::find(it + 1, fields.end(), kNames[c]) != fields.end()) {
          throw ConfigError(fmt::format("{}: the header '{}' has the column '{}' twice", where, quote_excerpt(line),
                                        kNames[c]));
        }
        if (it == fields.end()) {
          throw ConfigError(fmt::format("{}: the header '{}' has no column '{}' (expected iteration,rank,arrival_s)",
                                        where, quote_excerpt(line), kNames[c]));
        }
        index[c] = static_cast<std::size_t>(it - fields.begin());
      }
      columns = index;
      expected_fields = fields.size();
      continue;
    }
    if (fields.size() != expected_fields) {
      throw ConfigError(fmt::format("{}: line '{}' has {} fields, the header has {}", where, quote_excerpt(line), fields.size(),
                                    expected_fields));
    }
    Row row;
    row.line = line_no;
    row.iteration = parse_label(fields[(*columns)[0]], "iteration", where);
    row.rank = checked_rank(parse_label(fields[(*columns)[1]], "rank", where), where);
    const std::string_view time = fields[(*columns)[2]];
    const auto [end, ec] = std::from_chars(time.data(), time.data() + time.size(), row.time);
    if (time.empty() || ec != std::errc() || end != time.data() + time.size()) {
      throw ConfigError(fmt::format("{}: arrival_s '{}' is not a number", where, quote_excerpt(time)));
    }
    checked_time(row.time, time, "arrival_s", where);
    rows.push_back(row);
  }
  if (!columns) throw ConfigError(fmt::format("arrival trace '{}' is empty (expected the header iteration,rank,arrival_s)", source));
  return rows;
}

// A required member of an Inspector record, reached through `path` ("coll_perf.coll_sn").
const json::Value& member(const json::Value& record, std::string_view path, json::Value::Type type,
                          std::string_view source, std::size_t index) {
  const json::Value* at = &record;
  std::string_view rest = path;
  while (!rest.empty()) {
    const auto dot = rest.find('.');
    const std::string_view key = rest.substr(0, dot);
    at = at->find(key);
    if (!at) {
      throw ConfigError(fmt::format(
          "{}:{}: record {} has no '{}'{}", source, record.line, index, path,
          path.find("event_trace_ts") != std::string_view::npos
              ? " (per-rank start times need NCCL Inspector's verbose output, NCCL_INSPECTOR_DUMP_VERBOSE=1)"
              : ""));
    }
    rest.remove_prefix(dot == std::string_view::npos ? rest.size() : dot + 1);
  }
  if (at->type != type) {
    throw ConfigError(fmt::format("{}:{}: record {}: '{}' is {}, expected {}", source, at->line, index, path,
                                  json::type_name(at->type), json::type_name(type)));
  }
  return *at;
}

std::uint64_t integer_member(const json::Value& record, std::string_view path, std::string_view source,
                             std::size_t index) {
  const json::Value& v = member(record, path, json::Value::Type::Number, source, index);
  return parse_label(v.text, path, fmt::format("{}:{}: record {}", source, v.line, index));
}

// One collective record with the record that holds its rank's header: itself (v4.0-v4.2) or the
// last dump_stats marker before it (v4.3 writes the header once per dump).
struct CollectiveRecord {
  const json::Value* record = nullptr;
  const json::Value* header_holder = nullptr;
  std::size_t index = 0;
};

std::vector<const json::Value*> inspector_records(const std::vector<json::Value>& values) {
  // A JSON array of records is accepted too (some tools rewrite the stream that way).
  std::vector<const json::Value*> records;
  for (const auto& v : values) {
    if (v.type == json::Value::Type::Array) {
      for (const auto& item : v.items) records.push_back(&item);
    } else {
      records.push_back(&v);
    }
  }
  return records;
}

// The collective records, each with its header. P2P and proxy records and the markers
// themselves are not collectives and are skipped.
std::vector<CollectiveRecord> collective_records(const std::vector<const json::Value*>& records,
                                                 std::string_view source) {
  std::vector<CollectiveRecord> out;
  const json::Value* marker = nullptr;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const json::Value& r = *records[i];
    if (r.type != json::Value::Type::Object) {
      throw ConfigError(fmt::format("{}:{}: record {} is {}, expected an NCCL Inspector object", source, r.line, i,
                                    json::type_name(r.type)));
    }
    if (r.find("dump_stats")) {
      marker = r.find("header") ? &r : nullptr;
      continue;
    }
    if (!r.find("coll_perf")) continue;
    const json::Value* holder = r.find("header") ? &r : marker;
    if (!holder) {
      throw ConfigError(fmt::format(
          "{}:{}: record {} has no 'header' and no dump_stats marker before it carries one (Inspector v4.3 writes "
          "the header once per dump: keep the marker lines when filtering or splitting its files)",
          source, r.line, i));
    }
    out.push_back(CollectiveRecord{&r, holder, i});
  }
  return out;
}

// The communicator the trace is: the one asked for, else the only one. Several without a
// choice are refused with what each holds, so the user can pick.
std::string pick_communicator(const std::vector<CollectiveRecord>& colls, std::string_view source,
                              const std::optional<std::string>& wanted) {
  struct Seen {
    std::size_t records = 0;
    std::size_t line = 0;
    std::string coll;
  };
  std::map<std::string, Seen> seen;
  std::vector<std::string> order;
  for (const CollectiveRecord& c : colls) {
    const std::string& id = member(*c.header_holder, "header.id", json::Value::Type::String, source, c.index).text;
    auto [it, fresh] = seen.try_emplace(id);
    if (fresh) {
      order.push_back(id);
      it->second.line = c.record->line;
      const json::Value* coll = c.record->find("coll_perf")->find("coll");
      if (coll && coll->type == json::Value::Type::String) it->second.coll = coll->text;
    }
    ++it->second.records;
  }
  const auto listing = [&] {
    std::string text;
    for (const std::string& id : order) {
      const Seen& s = seen.at(id);
      text += fmt::format("{}{} ({} records{}{}, first on line {})", text.empty() ? "" : ", ", quote_excerpt(id),
                          s.records, s.coll.empty() ? "" : ", ", s.coll, s.line);
    }
    return text;
  };
  if (wanted) {
    if (!seen.contains(*wanted)) {
      throw ConfigError(fmt::format("arrival trace '{}' has no collectives of communicator '{}' (it has {})", source,
                                    quote_excerpt(*wanted), listing()));
    }
    return *wanted;
  }
  if (order.size() > 1) {
    throw ConfigError(fmt::format(
        "arrival trace '{}' holds collectives of {} communicators: {}. One trace is one collective group: pick one "
        "with --communicator ID (spec key communicator)",
        source, order.size(), listing()));
  }
  return order.front();
}

// Inspector names its output format in each record's metadata. The fields read here are those
// of v4.0 to v4.3; another version may have moved them, so it is read as v4 with a warning
// (refusing it would refuse the next release's traces outright). Records without metadata are
// read silently, as ever.
void warn_about_format_versions(const std::vector<json::Value>& values, std::vector<std::string>& warnings) {
  std::map<std::string, std::size_t> unknown;  // version -> first line
  for (const json::Value* record : inspector_records(values)) {
    const json::Value* metadata = record->find("metadata");
    const json::Value* version = metadata ? metadata->find("inspector_output_format_version") : nullptr;
    if (version == nullptr) continue;
    const std::string text =
        version->type == json::Value::Type::String ? version->text : std::string(json::type_name(version->type));
    if (text == "v4.0" || text == "v4.1" || text == "v4.2" || text == "v4.3") continue;
    unknown.emplace(text, version->line);
  }
  for (const auto& [text, line] : unknown) {
    warnings.push_back(
        fmt::format("line {}: NCCL Inspector output format '{}' is not one collsim knows (v4.0 to v4.3); "
                    "read as v4",
                    line, quote_excerpt(text)));
  }
}

std::vector<Row> inspector_rows(const std::vector<json::Value>& values, std::string_view source,
                                const std::optional<std::string>& wanted, std::uint32_t& group_size) {
  const std::vector<const json::Value*> records = inspector_records(values);
  if (records.empty()) throw ConfigError(fmt::format("arrival trace '{}' holds no NCCL Inspector records", source));
  const std::vector<CollectiveRecord> colls = collective_records(records, source);
  if (colls.empty()) {
    throw ConfigError(fmt::format("arrival trace '{}' holds {} NCCL Inspector records but no collective (coll_perf) "
                                  "among them",
                                  source, records.size()));
  }
  const std::string communicator = pick_communicator(colls, source, wanted);
  std::vector<Row> rows;
  std::map<std::uint64_t, std::pair<std::string, std::size_t>> collective_of;  // coll_sn -> (coll, line)
  for (const CollectiveRecord& c : colls) {
    const json::Value& r = *c.record;
    const json::Value& h = *c.header_holder;
    const std::size_t i = c.index;
    if (member(h, "header.id", json::Value::Type::String, source, i).text != communicator) continue;
    const std::string where = fmt::format("{}:{}: record {}", source, r.line, i);
    const std::uint64_t n_ranks = integer_member(h, "header.n_ranks", source, i);
    if (n_ranks > 0xFFFFFFFFull) {
      throw ConfigError(fmt::format("{}: header.n_ranks = {} is too large (at most 4294967295)", where, n_ranks));
    }
    if (group_size == 0) {
      group_size = static_cast<std::uint32_t>(n_ranks);
    } else if (n_ranks != group_size) {
      throw ConfigError(fmt::format("{}: header.n_ranks = {} but earlier records have {}", where, n_ranks, group_size));
    }
    Row row;
    row.line = r.line;
    row.rank = checked_rank(integer_member(h, "header.rank", source, i), where);
    row.iteration = integer_member(r, "coll_perf.coll_sn", source, i);
    // One sequence number is one collective on every rank: records that disagree on which one
    // (AllGather here, AllReduce on the other ranks) were mixed into one iteration unseen.
    if (const json::Value* coll = r.find("coll_perf")->find("coll"); coll && coll->type == json::Value::Type::String) {
      const auto [first, inserted] = collective_of.emplace(row.iteration, std::pair(coll->text, r.line));
      if (!inserted && first->second.first != coll->text) {
        throw ConfigError(fmt::format("{}: coll_perf.coll = '{}' but line {} has '{}' for coll_sn {}: one sequence "
                                      "number is one collective on every rank",
                                      where, quote_excerpt(coll->text), first->second.second,
                                      quote_excerpt(first->second.first), row.iteration));
      }
    }
    const json::Value& start = member(r, "coll_perf.event_trace_ts.coll_start_ts", json::Value::Type::Number, source, i);
    row.time = checked_time(start.number, start.text, "coll_start_ts", where);
    if (row.rank >= group_size) {
      throw ConfigError(fmt::format("{}: header.rank = {} is out of range for n_ranks = {}", where, row.rank, group_size));
    }
    rows.push_back(row);
  }
  return rows;
}

// The stream without its last line when that line alone is unfinished JSON (a job killed while
// Inspector was writing): nullopt when the text parses, or does not parse without it either.
std::optional<std::size_t> unfinished_last_line(std::string_view text, std::string_view source,
                                                std::vector<json::Value>& values) {
  std::string_view body = text;
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r' || body.back() == ' ')) body.remove_suffix(1);
  const auto newline = body.rfind('\n');
  if (newline == std::string_view::npos) return std::nullopt;
  try {
    values = json::parse_stream(body.substr(0, newline + 1), source);
  } catch (const ConfigError&) {
    return std::nullopt;
  }
  return static_cast<std::size_t>(std::count(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(newline), '\n')) + 2;
}

std::vector<json::Value> inspector_values(std::string_view text, std::string_view source, bool skip_incomplete,
                                          std::vector<std::string>& warnings) {
  try {
    return json::parse_stream(text, source);
  } catch (const json::IncompleteError& e) {
    // Only a record cut off by the end of the file is unfinished; a complete last line holding a
    // bad value (1e400, a repeated key) is reported as it is, with or without --skip-incomplete.
    std::vector<json::Value> values;
    const std::optional<std::size_t> line = unfinished_last_line(text, source, values);
    if (!line) throw;
    if (!skip_incomplete) {
      throw ConfigError(fmt::format("{} (only the last line, {}, is unfinished, as when a job is killed while "
                                    "writing: --skip-incomplete drops it)",
                                    e.what(), *line));
    }
    warnings.push_back(fmt::format("dropped line {}, an unfinished last record", *line));
    return values;
  }
}

// Groups rows by iteration, checks that every iteration has each rank of the group exactly once,
// and shifts each iteration to its earliest arrival. group_size 0 = max rank + 1.
// The ranks that appear anywhere, for the hint when ranks are not numbered 0..k-1 (a trace with
// global ranks 3, 19, 35, ... misses rank 0 in every iteration).
std::vector<std::uint32_t> distinct_ranks(const std::vector<Row>& rows) {
  std::vector<std::uint32_t> ranks;
  for (const Row& r : rows) ranks.push_back(r.rank);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

std::string ranks_seen(const std::vector<Row>& rows, std::uint64_t group_size) {
  const std::vector<std::uint32_t> ranks = distinct_ranks(rows);
  if (ranks.size() * 2 > group_size) return "";
  std::string shown;
  for (std::size_t i = 0; i < std::min<std::size_t>(ranks.size(), 6); ++i) shown += fmt::format("{}{}", i ? ", " : "", ranks[i]);
  return fmt::format("; the trace names only {} distinct ranks ({}{}): number the ranks 0..k-1 inside the "
                     "collective's group",
                     ranks.size(), shown, ranks.size() > 6 ? ", ..." : "");
}

ArrivalTrace assemble(std::vector<Row> rows, std::uint32_t group_size, double unit_s, std::string_view source,
                      std::optional<std::uint32_t> n, bool skip_incomplete, std::vector<std::string> warnings) {
  if (rows.empty()) throw ConfigError(fmt::format("arrival trace '{}' holds no arrivals", source));
  // Counted in 64 bits: rank 4294967295 + 1 wrapped to 0 in 32, which left the group smaller
  // than that rank and the slot lookup below out of bounds.
  std::uint64_t ranks = group_size;
  if (ranks == 0) {
    for (const Row& r : rows) ranks = std::max<std::uint64_t>(ranks, std::uint64_t{r.rank} + 1);
  }
  if (n && ranks != *n) {
    throw ConfigError(fmt::format("arrival trace '{}': the group has {} ranks (0..{}) but n = {}", source, ranks,
                                  ranks - 1, *n));
  }
  if (ranks < 2) {
    throw ConfigError(fmt::format("arrival trace '{}': the group has {} rank; a collective needs at least 2", source,
                                  ranks));
  }
  // Every iteration lists every rank: a group larger than the rows is refused before a slot per
  // rank is allocated for it (a rank of 4,000,000,000 on one line asked for 32 GB).
  if (ranks > rows.size()) {
    // Name the first rank no row has: with ranks 0 and 2 the message said neither.
    const std::vector<std::uint32_t> seen = distinct_ranks(rows);
    std::uint32_t absent = 0;
    while (absent < seen.size() && seen[absent] == absent) ++absent;
    throw ConfigError(
        fmt::format("arrival trace '{}': the group has {} ranks (0..{}) but the trace holds only {} "
                    "arrivals; every iteration must list every rank (rank {} is in no row){}",
                    source, ranks, ranks - 1, rows.size(), absent, ranks_seen(rows, ranks)));
  }
  group_size = static_cast<std::uint32_t>(ranks);
  std::map<std::uint64_t, std::vector<const Row*>> by_iteration;
  for (const Row& r : rows) {
    auto& slots = by_iteration[r.iteration];
    if (slots.empty()) slots.assign(group_size, nullptr);
    if (const Row* first = slots[r.rank]) {
      throw ConfigError(fmt::format("{}:{}: iteration {} rank {} is given twice (first on line {})", source, r.line,
                                    r.iteration, r.rank, first->line));
    }
    slots[r.rank] = &r;
  }
  ArrivalTrace trace;
  trace.source = std::string(source);
  trace.n = group_size;
  std::vector<std::uint64_t> skipped;
  for (const auto& [iteration, slots] : by_iteration) {
    const auto missing = std::find(slots.begin(), slots.end(), nullptr);
    if (missing != slots.end()) {
      if (skip_incomplete) {
        skipped.push_back(iteration);
        continue;
      }
      std::size_t first_line = 0;
      for (const Row* r : slots) {
        if (r && (first_line == 0 || r->line < first_line)) first_line = r->line;
      }
      const std::string sparse = ranks_seen(rows, group_size);
      throw ConfigError(fmt::format("{}:{}: iteration {} has no row for rank {} (the group has ranks 0..{}){}", source,
                                    first_line, iteration, missing - slots.begin(), group_size - 1,
                                    sparse.empty() ? "; --skip-incomplete drops iterations that lack a rank" : sparse));
    }
    double earliest = slots.front()->time;
    for (const Row* r : slots) earliest = std::min(earliest, r->time);
    std::vector<double> delays;
    delays.reserve(group_size);
    for (const Row* r : slots) {
      // The range of every delay (kMaxDuration_s): a time of 1e300 ran and printed a 300-digit
      // "mean" and completion time.
      const double delay_s = (r->time - earliest) * unit_s;
      if (!(delay_s <= kMaxDuration_s)) {
        throw ConfigError(
            fmt::format("{}:{}: iteration {} rank {} arrives {:.12g} s after the first rank of its iteration, "
                        "beyond the supported {:g} s (1 hour)",
                        source, r->line, iteration, r->rank, delay_s, kMaxDuration_s));
      }
      delays.push_back(delay_s);
    }
    trace.iterations.push_back(iteration);
    trace.delay_s.push_back(std::move(delays));
  }
  if (!skipped.empty()) {
    if (trace.iterations.empty()) {
      throw ConfigError(fmt::format("arrival trace '{}': none of its {} iterations lists every rank 0..{}{}", source,
                                    skipped.size(), group_size - 1, ranks_seen(rows, group_size)));
    }
    std::string labels;
    for (std::size_t i = 0; i < std::min<std::size_t>(skipped.size(), 5); ++i) labels += fmt::format("{}{}", i ? ", " : "", skipped[i]);
    warnings.push_back(fmt::format("skipped {} of {} iterations that lack a rank ({}{})", skipped.size(),
                                   skipped.size() + trace.iterations.size(), labels, skipped.size() > 5 ? ", ..." : ""));
  }
  trace.warnings = std::move(warnings);
  return trace;
}

bool looks_like_json(std::string_view text) {
  const std::string_view t = trim(text);
  return !t.empty() && (t.front() == '{' || t.front() == '[');
}

}  // namespace

ArrivalTrace ArrivalTrace::only(std::uint64_t label) const {
  const auto it = std::find(iterations.begin(), iterations.end(), label);
  if (it == iterations.end()) {
    throw ConfigError(fmt::format("arrival trace '{}' has no iteration {} (it has {} iterations, {}..{})", source, label,
                                  iterations.size(), iterations.empty() ? 0 : iterations.front(),
                                  iterations.empty() ? 0 : iterations.back()));
  }
  ArrivalTrace one;
  one.source = source;
  one.n = n;
  one.iterations = {label};
  one.delay_s = {delay_s[static_cast<std::size_t>(it - iterations.begin())]};
  return one;
}

std::uint32_t ArrivalTrace::last_rank(std::size_t i) const {
  const auto& d = delay_s.at(i);
  return static_cast<std::uint32_t>(std::max_element(d.begin(), d.end()) - d.begin());
}

bool ArrivalTrace::all_tied(std::size_t i) const {
  const auto& d = delay_s.at(i);
  return *std::max_element(d.begin(), d.end()) == 0;  // delays are measured from the earliest
}

std::uint32_t ArrivalTrace::most_often_last() const {
  // An iteration in which every rank arrived together names nobody: counting it for rank 0 (the
  // lowest on the tie) would make rank 0 the straggler of a trace where it never was late.
  std::vector<std::size_t> count(n, 0);
  bool any = false;
  for (std::size_t i = 0; i < size(); ++i) {
    if (all_tied(i)) continue;
    ++count[last_rank(i)];
    any = true;
  }
  if (!any) return n - 1;  // nobody is ever late: the default straggler, as without a trace
  return static_cast<std::uint32_t>(std::max_element(count.begin(), count.end()) - count.begin());
}

ArrivalTrace parse_arrival_trace(std::string_view text, std::string_view source, std::optional<std::uint32_t> n,
                                 const ArrivalTraceOptions& options) {
  // A UTF-8 byte order mark (spreadsheets write one before "iteration,...") is not part of the
  // first column's name, nor of a JSON record.
  text = collsim::text::without_byte_order_mark(text);
  if (trim(text).empty()) throw ConfigError(fmt::format("arrival trace '{}' is empty", source));
  if (looks_like_json(text)) {
    std::vector<std::string> warnings;
    const std::vector<json::Value> values = inspector_values(text, source, options.skip_incomplete, warnings);
    std::uint32_t group_size = 0;
    std::vector<Row> rows = inspector_rows(values, source, options.communicator, group_size);
    warn_about_format_versions(values, warnings);
    return assemble(std::move(rows), group_size, 1e-6, source, n, options.skip_incomplete, std::move(warnings));
  }
  if (options.communicator) {
    throw ConfigError(fmt::format("arrival trace '{}' is CSV: a communicator ('{}') is picked only in NCCL Inspector "
                                  "JSON", source, quote_excerpt(*options.communicator)));
  }
  return assemble(csv_rows(text, source), 0, 1.0, source, n, options.skip_incomplete, {});
}

ArrivalTrace read_arrival_trace(const std::filesystem::path& file, std::optional<std::uint32_t> n,
                                const ArrivalTraceOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    throw ConfigError(fmt::format("arrival trace '{}' is a directory (give one file; concatenate NCCL Inspector's "
                                  "per-process files into one)", file.string()));
  }
  return parse_arrival_trace(read_text_file(file, "arrival trace", kDataFileMaxBytes), file.string(), n, options);
}

}  // namespace collsim
