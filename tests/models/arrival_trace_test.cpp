#include "collsim/models/formats/arrival_trace.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <string>

#include "collsim/models/arrival.hpp"
#include "collsim/models/arrival_trace_stats.hpp"
#include "collsim/models/formats/arrival_yaml.hpp"
#include "test_support.hpp"

namespace collsim {
namespace {

using test::expect_config_error;

const std::filesystem::path kData = std::filesystem::path(COLLSIM_TEST_DATA_DIR) / "arrivals";

ArrivalTrace csv(const std::string& body, std::optional<std::uint32_t> n = std::nullopt) {
  return parse_arrival_trace(fmt::format("iteration,rank,arrival_s\n{}", body), "t.csv", n);
}

TEST(ArrivalTrace, CsvDelaysAreRelativeToTheEarliestArrivalOfEachIteration) {
  // Rows in any order, iterations with gaps, a comment line, columns in another order.
  const ArrivalTrace t = parse_arrival_trace(
      "rank,arrival_s,iteration\n# comment\n1,5.5,7\n0,5.0,7\n0,1.25,3\n1,1.0,3\n", "t.csv");
  EXPECT_EQ(t.n, 2u);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.iterations, (std::vector<std::uint64_t>{3, 7}));
  EXPECT_EQ(t.delay_s[0], (std::vector<double>{0.25, 0.0}));
  EXPECT_EQ(t.delay_s[1], (std::vector<double>{0.0, 0.5}));
  EXPECT_EQ(t.last_rank(0), 0u);
  EXPECT_EQ(t.last_rank(1), 1u);
}

TEST(ArrivalTrace, CsvErrorsNameFileLineAndValue) {
  expect_config_error([] { csv("0,0,0\n0,1,x\n"); }, {"t.csv:3", "arrival_s 'x'", "not a number"});
  expect_config_error([] { csv("0,0,0\n0,1,-1.5\n"); }, {"t.csv:3", "'-1.5'", "negative"});
  expect_config_error([] { csv("0,0,0\n0,1,inf\n"); }, {"t.csv:3", "'inf'", "not a finite"});
  expect_config_error([] { csv("0,0,0\n0,1,nan\n"); }, {"t.csv:3", "'nan'", "not a finite"});
  expect_config_error([] { csv("0,0,0\n0,1\n"); }, {"t.csv:3", "2 fields", "header has 3"});
  expect_config_error([] { csv("0,-1,0\n"); }, {"t.csv:2", "rank '-1'"});
  expect_config_error([] { csv("a,0,0\n"); }, {"t.csv:2", "iteration 'a'"});
  expect_config_error([] { csv("0,0,0\n0,1,1\n0,1,2\n"); }, {"t.csv:4", "iteration 0 rank 1 is given twice", "line 3"});
  expect_config_error([] { csv("0,0,0\n0,1,1\n0,2,1\n1,0,0\n1,2,1\n"); },
                      {"t.csv:5", "iteration 1 has no row for rank 1", "0..2"});
  expect_config_error([] { csv("0,0,0\n0,1,1\n", 4); }, {"t.csv", "group has 2 ranks", "n = 4"});
  expect_config_error([] { csv("0,0,0\n"); }, {"t.csv", "1 rank", "at least 2"});
  // A rank far past the rows is refused before a slot per rank is allocated (32 GB here).
  expect_config_error([] { csv("0,0,1\n0,4000000000,2\n"); },
                      {"t.csv", "4000000001 ranks", "only 2 arrivals", "every iteration must list every rank"});
  // The largest 32-bit rank: its group size (2^32) does not fit 32 bits, and once wrapped to a
  // group of 2 the rank indexed past the slots of its iteration.
  expect_config_error([] { csv("0,0,0\n0,1,1\n0,4294967295,2\n"); },
                      {"t.csv", "4294967296 ranks (0..4294967295)", "only 3 arrivals"});
  expect_config_error([] { csv("0,0,0\n0,4294967295,2\n"); }, {"t.csv", "4294967296 ranks", "only 2 arrivals"});
  // Delays past the range of every delay (1 hour) are refused by line; absolute times are fine.
  expect_config_error([] { csv("0,0,0\n0,1,1e300\n"); },
                      {"t.csv:3", "iteration 0 rank 1 arrives 1e+300 s after the first rank", "1 hour"});
  expect_config_error([] { csv("0,0,0\n0,1,3600.5\n"); }, {"t.csv:3", "3600.5 s"});
  EXPECT_EQ(csv("0,0,1.75e9\n0,1,1750000025.5\n").delay_s[0][1], 25.5);
  expect_config_error([] { parse_arrival_trace("iter,rank,arrival_s\n0,0,0\n", "t.csv"); },
                      {"t.csv:1", "no column 'iteration'"});
  expect_config_error([] { parse_arrival_trace("", "t.csv"); }, {"t.csv", "empty"});
  expect_config_error([] { parse_arrival_trace("# only a comment\n\n", "t.csv"); }, {"t.csv", "empty"});
  expect_config_error([] { parse_arrival_trace("iteration,rank,arrival_s\n", "t.csv"); }, {"t.csv", "no arrivals"});
}

// A UTF-8 byte order mark (a spreadsheet's "CSV UTF-8") before the header or a JSON record was
// read as part of the first column's name: "the header 'iteration,...' has no column
// 'iteration'". A NUL in an echoed line cut the message there ("line '"), losing the reason.
TEST(ArrivalTrace, ByteOrderMarkAndNulBytes) {
  const ArrivalTrace bom = parse_arrival_trace("\xEF\xBB\xBFiteration,rank,arrival_s\n0,0,0\n0,1,0.5\n", "t.csv");
  EXPECT_EQ(bom.n, 2u);
  EXPECT_EQ(bom.delay_s[0][1], 0.5);
  const std::string json = "\xEF\xBB\xBF{\"header\": {\"id\": \"0x1\", \"rank\": 0, \"n_ranks\": 2}, \"coll_perf\": "
                           "{\"coll_sn\": 1, \"event_trace_ts\": {\"coll_start_ts\": 10}}}\n"
                           "{\"header\": {\"id\": \"0x1\", \"rank\": 1, \"n_ranks\": 2}, \"coll_perf\": "
                           "{\"coll_sn\": 1, \"event_trace_ts\": {\"coll_start_ts\": 30}}}\n";
  EXPECT_NEAR(parse_arrival_trace(json, "i.json").delay_s[0][1], 20e-6, 1e-15);
  using namespace std::string_literals;
  expect_config_error([] { csv("0,0,0\n0,1,0.5\n\0\n"s); }, {"t.csv:4: line '?' has 1 fields, the header has 3"});
  expect_config_error([] { csv("0,0,0\n0,1\0,0.5\n"s); }, {"t.csv:3: rank '1?' is not a non-negative integer"});
  // Whatever else echoes a NUL, what() keeps the rest of the message.
  EXPECT_EQ(std::string(ConfigError("a \0 b"s).what()), "a \\x00 b");
}

TEST(ArrivalTrace, FileErrors) {
  expect_config_error([] { read_arrival_trace(kData); }, {kData.string(), "is a directory"});
  expect_config_error([] { read_arrival_trace(kData / "missing.csv"); }, {"cannot read", "missing.csv"});
}

TEST(ArrivalTrace, InspectorVerboseJson) {
  const ArrivalTrace t = read_arrival_trace(kData / "inspector_verbose.json", 3);
  EXPECT_EQ(t.n, 3u);
  EXPECT_EQ(t.iterations, (std::vector<std::uint64_t>{10, 11}));
  ASSERT_EQ(t.size(), 2u);
  EXPECT_NEAR(t.delay_s[0][0], 0.0, 1e-12);
  EXPECT_NEAR(t.delay_s[0][1], 500e-6, 1e-12);
  EXPECT_NEAR(t.delay_s[0][2], 2000e-6, 1e-12);
  EXPECT_NEAR(t.delay_s[1][1], 100e-6, 1e-12);
  EXPECT_NEAR(t.delay_s[1][2], 20e-6, 1e-12);
  expect_config_error([] { read_arrival_trace(kData / "inspector_verbose.json", 4); }, {"group has 3 ranks", "n = 4"});
}

std::string record(const std::string& id, int rank, long long n_ranks, int sn, const std::string& start) {
  return fmt::format(
      "{{\"header\": {{\"id\": \"{}\", \"rank\": {}, \"n_ranks\": {}}}, \"coll_perf\": {{\"coll\": \"AllReduce\", "
      "\"coll_sn\": {}, \"event_trace_ts\": {{\"coll_start_ts\": {}}}}}}}\n",
      id, rank, n_ranks, sn, start);
}

TEST(ArrivalTrace, InspectorErrors) {
  const auto parse = [](const std::string& text) { return parse_arrival_trace(text, "i.json"); };
  // An array of records is the same trace as the stream.
  const std::string array = fmt::format("[{},{}]", record("0x1", 0, 2, 1, "10"), record("0x1", 1, 2, 1, "30"));
  EXPECT_NEAR(parse(array).delay_s[0][1], 20e-6, 1e-15);
  expect_config_error([&] { parse(record("0x1", 0, 2, 1, "10") + record("0x2", 1, 2, 1, "10")); },
                      {"i.json", "2 communicators", "0x1 (1 records, AllReduce, first on line 1)",
                       "0x2 (1 records, AllReduce, first on line 2)", "--communicator ID"});
  expect_config_error([&] { parse(record("0x1", 0, 2, 1, "10") + record("0x1", 0, 2, 1, "12")); },
                      {"i.json:2", "iteration 1 rank 0 is given twice"});
  expect_config_error([&] { parse(record("0x1", 0, 2, 1, "10") + record("0x1", 1, 2, 1, "-4")); },
                      {"i.json:2", "coll_start_ts '-4'", "negative"});
  expect_config_error([&] { parse(record("0x1", 0, 2, 1, "10") + record("0x1", 2, 2, 1, "4")); },
                      {"i.json:2", "header.rank = 2", "n_ranks = 2"});
  expect_config_error([&] { parse(record("0x1", 0, 2, 1, "10") + record("0x1", 1, 3, 1, "4")); },
                      {"i.json:2", "n_ranks = 3", "earlier records have 2"});
  expect_config_error([&] { parse(record("0x1", 0, 4294967298ull, 1, "10")); },
                      {"i.json:1", "header.n_ranks = 4294967298 is too large"});
  expect_config_error([&] { parse(record("0x1", 0, 300000000, 1, "10")); }, {"300000000 ranks", "only 1 arrivals"});
  expect_config_error([&] { parse(record("0x1", 0, 2, 1, "10") + record("0x1", 1, 2, 2, "4")); },
                      {"iteration 1 has no row for rank 1"});
  expect_config_error([&] { parse("{\"header\": {\"id\": \"0x1\", \"rank\": 0, \"n_ranks\": 2}, \"coll_perf\": {\"coll_sn\": 1}}"); },
                      {"i.json:1", "coll_perf.event_trace_ts.coll_start_ts", "NCCL_INSPECTOR_DUMP_VERBOSE=1"});
  expect_config_error([&] { parse(record("0x1", 0, 2, 1, "\"10\"")); }, {"i.json:1", "is a string, expected a number"});
  expect_config_error([&] { parse("{\"header\": {\n\"id\": 0x1}}"); }, {"i.json:2", "invalid JSON"});
  expect_config_error([&] { parse("{\"header\": {\"id\": \"0x1\"}"); }, {"i.json:1", "end of the file"});
  expect_config_error([&] { parse("[]"); }, {"i.json", "no NCCL Inspector records"});
  expect_config_error([&] { parse("[1]"); }, {"i.json:1", "record 0 is a number"});
  // One coll_sn is one collective on every rank: a record of another collective under it was
  // taken into the iteration as if it were the same AllReduce.
  std::string other = record("0x1", 1, 2, 1, "4");
  other.replace(other.find("AllReduce"), 9, "AllGather");
  expect_config_error([&] { parse(record("0x1", 0, 2, 1, "10") + other); },
                      {"i.json:2: record 1: coll_perf.coll = 'AllGather' but line 1 has 'AllReduce' for coll_sn 1"});
}

// Inspector v4.3 writes header and metadata once per dump, in a dump_stats marker; the operation
// lines after it carry none. v4.0-v4.2 files and v4.3 files concatenated mix the two.
std::string marker(const std::string& id, int rank, int n_ranks) {
  return fmt::format(
      "{{\"header\": {{\"id\": \"{}\", \"rank\": {}, \"n_ranks\": {}}}, \"metadata\": "
      "{{\"inspector_output_format_version\": \"v4.3\"}}, \"dump_stats\": {{\"coll_records\": 1, \"p2p_records\": 1}}}}\n",
      id, rank, n_ranks);
}

std::string bare_collective(int sn, const std::string& start) {
  return fmt::format(
      "{{\"coll_perf\": {{\"coll\": \"AllReduce\", \"coll_sn\": {}, \"event_trace_ts\": {{\"coll_start_ts\": {}}}}}}}\n", sn,
      start);
}

const std::string kP2p = "{\"p2p_perf\": {\"p2p\": \"Send\", \"p2p_sn\": 0, \"p2p_peer\": 1}}\n";

TEST(ArrivalTrace, InspectorMarkersCarryTheHeaderOfTheLinesAfterThem) {
  const std::string v43 = marker("0x1", 0, 2) + bare_collective(5, "100") + kP2p + marker("0x1", 1, 2) + kP2p +
                          bare_collective(5, "130");
  const ArrivalTrace t = parse_arrival_trace(v43, "i.json");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t.iterations[0], 5u);
  EXPECT_NEAR(t.delay_s[0][1], 30e-6, 1e-15);
  // A v4.0 record (its own header) next to v4.3 lines, and p2p/proxy records in between.
  const std::string mixed = record("0x1", 0, 2, 5, "100") + "{\"proxy_trace\": {\"record_sn\": 1}}\n" + marker("0x1", 1, 2) +
                            bare_collective(5, "130");
  EXPECT_NEAR(parse_arrival_trace(mixed, "i.json").delay_s[0][1], 30e-6, 1e-15);
  // A collective line without a header before it cannot be placed.
  expect_config_error([] { parse_arrival_trace(bare_collective(5, "100"), "i.json"); },
                      {"i.json:1", "no 'header' and no dump_stats marker before it"});
  expect_config_error([] { parse_arrival_trace(marker("0x1", 0, 2) + kP2p, "i.json"); },
                      {"i.json", "2 NCCL Inspector records but no collective"});
}

TEST(ArrivalTrace, CommunicatorPicksOneGroupOfAnInspectorFile) {
  const std::string two = record("0x1", 0, 2, 1, "10") + record("0x2", 0, 3, 1, "10") + record("0x1", 1, 2, 1, "15") +
                          record("0x2", 1, 3, 1, "12") + record("0x2", 2, 3, 1, "19");
  ArrivalTraceOptions options;
  options.communicator = "0x2";
  const ArrivalTrace t = parse_arrival_trace(two, "i.json", std::nullopt, options);
  EXPECT_EQ(t.n, 3u);
  EXPECT_NEAR(t.delay_s[0][2], 9e-6, 1e-15);
  options.communicator = "0x1";
  EXPECT_EQ(parse_arrival_trace(two, "i.json", std::nullopt, options).n, 2u);
  options.communicator = "0x3";
  expect_config_error([&] { parse_arrival_trace(two, "i.json", std::nullopt, options); },
                      {"no collectives of communicator '0x3'", "0x1 (2 records", "0x2 (3 records"});
  expect_config_error([&] { parse_arrival_trace("iteration,rank,arrival_s\n0,0,0\n0,1,1\n", "t.csv", std::nullopt, options); },
                      {"t.csv", "is CSV", "only in NCCL Inspector JSON"});
}

TEST(ArrivalTrace, SkipIncompleteDropsIterationsThatLackARank) {
  const std::string body = "iteration,rank,arrival_s\n0,0,0\n0,1,1\n1,0,0\n2,0,5\n2,1,5.5\n";
  expect_config_error([&] { parse_arrival_trace(body, "t.csv"); },
                      {"t.csv:4", "iteration 1 has no row for rank 1", "--skip-incomplete"});
  ArrivalTraceOptions options;
  options.skip_incomplete = true;
  const ArrivalTrace t = parse_arrival_trace(body, "t.csv", std::nullopt, options);
  EXPECT_EQ(t.iterations, (std::vector<std::uint64_t>{0, 2}));
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find("skipped 1 of 3 iterations that lack a rank (1)"), std::string::npos) << t.warnings[0];
  // A duplicate stays an error, and a trace with no complete iteration says so.
  expect_config_error([&] { parse_arrival_trace(body + "2,1,6\n", "t.csv", std::nullopt, options); }, {"given twice"});
  expect_config_error([&] { parse_arrival_trace("iteration,rank,arrival_s\n0,0,0\n1,1,0\n", "t.csv", std::nullopt, options); },
                      {"none of its 2 iterations lists every rank 0..1"});
  EXPECT_TRUE(csv("0,0,0\n0,1,1\n").warnings.empty());
}

TEST(ArrivalTrace, AnUnfinishedLastJsonLineIsNamedAndCanBeDropped) {
  std::string text = record("0x1", 0, 2, 1, "10") + record("0x1", 1, 2, 1, "15") + record("0x1", 0, 2, 2, "30");
  text.resize(text.size() - 20);  // the job was killed while the last record was written
  expect_config_error([&] { parse_arrival_trace(text, "i.json"); },
                      {"i.json:3", "only the last line, 3, is unfinished", "--skip-incomplete"});
  ArrivalTraceOptions options;
  options.skip_incomplete = true;
  const ArrivalTrace t = parse_arrival_trace(text, "i.json", std::nullopt, options);
  EXPECT_EQ(t.size(), 1u);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find("dropped line 3"), std::string::npos);
  // Broken JSON elsewhere is an error either way.
  std::string middle = record("0x1", 0, 2, 1, "10") + "{\"header\": \n" + record("0x1", 1, 2, 1, "15");
  expect_config_error([&] { parse_arrival_trace(middle, "i.json", std::nullopt, options); }, {"invalid JSON"});
  // A complete last record with a bad value is not unfinished: it is named as it is, not dropped.
  const std::string two = record("0x1", 0, 2, 1, "10") + record("0x1", 1, 2, 1, "15");
  for (const ArrivalTraceOptions& o : {ArrivalTraceOptions{}, options}) {
    expect_config_error([&] { parse_arrival_trace(two + record("0x1", 0, 2, 2, "1e400"), "i.json", std::nullopt, o); },
                        {"i.json:3: invalid JSON: '1e400' is not a number"});
    std::string repeated = record("0x1", 0, 2, 2, "30");
    repeated.insert(1, "\"header\": 1, ");
    expect_config_error([&] { parse_arrival_trace(two + repeated, "i.json", std::nullopt, o); },
                        {"i.json:3: invalid JSON: the key 'header' appears twice"});
    expect_config_error([&] { parse_arrival_trace(two + "x\n", "i.json", std::nullopt, o); },
                        {"i.json:3: invalid JSON: unexpected character 'x'"});
  }
  // A literal cut off at the end ("tru") is unfinished, as a cut-off number, string or \u
  // escape is, also before a last line break (LF or CR LF).
  for (const std::string tail : {"{\"header\": tru", "{\"header\": tru\n", "{\"header\": \"ab\\u00",
                                 "{\"header\": \"ab\\u00\r\n", "{\"header\": \"ab\r\n", "{\"header\": 12\r\n"}) {
    const std::string cut = two + tail;
    EXPECT_EQ(parse_arrival_trace(cut, "i.json", std::nullopt, options).size(), 1u) << tail;
    expect_config_error([&] { parse_arrival_trace(cut, "i.json"); }, {"only the last line, 3, is unfinished"});
  }
  // The same, complete but wrong, is named.
  expect_config_error(
      [&] { parse_arrival_trace(two + "{\"header\": \"ab\\u00zz\"}\n", "i.json", std::nullopt, options); },
      {"i.json:3: invalid JSON: bad \\u escape"});
  expect_config_error([&] { parse_arrival_trace(two + "{\"header\": trux}\n", "i.json", std::nullopt, options); },
                      {"i.json:3: invalid JSON: unexpected character 't'"});
}

// A format version other than v4.0..v4.3 is read as v4, with a warning naming it and its line.
TEST(ArrivalTrace, AnUnknownInspectorFormatVersionIsAWarning) {
  const auto with_version = [](std::string record, const std::string& version) {
    return record.insert(1, "\"metadata\": {\"inspector_output_format_version\": " + version + "}, ");
  };
  const std::string known = with_version(record("0x1", 0, 2, 1, "10"), "\"v4.3\"") + record("0x1", 1, 2, 1, "15");
  EXPECT_TRUE(parse_arrival_trace(known, "i.json").warnings.empty());
  const ArrivalTrace t = parse_arrival_trace(
      with_version(record("0x1", 0, 2, 1, "10"), "\"v5.0\"") + with_version(record("0x1", 1, 2, 1, "15"), "7"),
      "i.json");
  EXPECT_EQ(t.size(), 1u);
  ASSERT_EQ(t.warnings.size(), 2u);
  EXPECT_NE(t.warnings[0].find("NCCL Inspector output format 'a number' is not one collsim knows"), std::string::npos)
      << t.warnings[0];
  EXPECT_NE(t.warnings[1].find("line 1: NCCL Inspector output format 'v5.0'"), std::string::npos) << t.warnings[1];
}

TEST(ArrivalTrace, QuotedCsvFieldsAndGlobalRankHint) {
  // pandas QUOTE_ALL, and R's write.csv with its row-name column.
  const ArrivalTrace q = parse_arrival_trace("\"iteration\",\"rank\",\"arrival_s\"\n\"0\",\"0\",\"1.5\"\n0,1,2\n", "t.csv");
  EXPECT_DOUBLE_EQ(q.delay_s[0][1], 0.5);
  const ArrivalTrace r = parse_arrival_trace("\"\",\"iteration\",\"rank\",\"arrival_s\"\n\"1\",0,0,0\n\"2\",0,1,0.25\n", "t.csv");
  EXPECT_DOUBLE_EQ(r.delay_s[0][1], 0.25);
  // An extra column with a comma inside its quotes is one field.
  const ArrivalTrace c = parse_arrival_trace("iteration,rank,arrival_s,where\n0,0,0,\"n1,gpu0\"\n0,1,0.5,\"n1,gpu1\"\n", "t.csv");
  EXPECT_DOUBLE_EQ(c.delay_s[0][1], 0.5);
  // Global rank ids (this group's members are ranks 3 and 19 of the job) are not 0..k-1.
  expect_config_error([] { parse_arrival_trace("iteration,rank,arrival_s\n0,3,0\n0,19,1\n1,3,0\n1,19,1\n", "t.csv"); },
                      {"only 4 arrivals", "only 2 distinct ranks (3, 19)", "number the ranks 0..k-1"});
  // The rank that no row has is named, and a delay just past the hour is shown with its digits.
  expect_config_error([] { parse_arrival_trace("iteration,rank,arrival_s\n0,0,0\n0,2,1\n", "t.csv"); },
                      {"holds only 2 arrivals", "(rank 1 is in no row)"});
  expect_config_error([] { parse_arrival_trace("iteration,rank,arrival_s\n0,0,0\n0,1,3600.000001\n", "t.csv"); },
                      {"t.csv:3: iteration 0 rank 1 arrives 3600.000001 s after the first rank"});
  // With enough iterations to get past that count, the missing rank 0 gets the same hint.
  std::string many = "iteration,rank,arrival_s\n";
  for (int i = 0; i < 12; ++i) many += fmt::format("{0},3,0\n{0},19,1\n", i);
  expect_config_error([&] { parse_arrival_trace(many, "t.csv"); },
                      {"t.csv:2", "no row for rank 0", "only 2 distinct ranks (3, 19)"});
}

// Ambiguous input is refused, not read one way: a column or a key given twice, and JSON that is
// not JSON (escapes it does not have, raw control characters).
TEST(ArrivalTrace, AmbiguousOrInvalidTextIsRefused) {
  expect_config_error([] { parse_arrival_trace("iteration,rank,arrival_s,iteration\n0,0,0,1\n", "t.csv"); },
                      {"t.csv:1", "the column 'iteration' twice"});
  std::string twice = record("0x1", 0, 2, 1, "10");
  twice.replace(twice.find("\"rank\": 0"), 9, "\"rank\": 0, \"rank\": 1");
  expect_config_error([&] { parse_arrival_trace(twice, "i.json"); }, {"i.json:1", "the key 'rank' appears twice"});
  std::string escape = record("0x1", 0, 2, 1, "10");
  escape.replace(escape.find("0x1"), 3, "0\\q1");
  expect_config_error([&] { parse_arrival_trace(escape, "i.json"); }, {"i.json:1", "'\\q' is not a JSON escape"});
  std::string control = record("0x1", 0, 2, 1, "10");
  control.replace(control.find("0x1"), 3, "0\x01" "1");
  expect_config_error([&] { parse_arrival_trace(control, "i.json"); }, {"i.json:1", "control character"});
}

TEST(ArrivalYaml, TraceReadingKeysAreParsedAndWrittenBack) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "collsim_trace_keys";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "t.csv") << "iteration,rank,arrival_s\n0,0,0\n0,1,1\n1,0,0\n";
  const YAML::Node node = YAML::Load("{model: trace, file: t.csv, skip_incomplete: true}");
  const ArrivalSpec spec = parse_arrival_yaml(node, "arrival", std::nullopt, dir);
  EXPECT_TRUE(spec.trace_options.skip_incomplete);
  EXPECT_EQ(spec.trace->size(), 1u);
  EXPECT_EQ(arrival_to_yaml(spec)["skip_incomplete"].as<bool>(), true);
  expect_config_error([&] { parse_arrival_yaml(YAML::Load("{model: trace, file: t.csv}"), "arrival", std::nullopt, dir); },
                      {"no row for rank 1"});
  expect_config_error([&] { parse_arrival_yaml(YAML::Load("{model: trace, file: t.csv, skip_incomplete: yes}"), "arrival", std::nullopt, dir); },
                      {"arrival.skip_incomplete", "'yes' must be true or false"});
  expect_config_error([&] { parse_arrival_yaml(YAML::Load("{model: trace, file: t.csv, communicator: 0x1}"), "arrival", std::nullopt, dir); },
                      {"is CSV"});
  std::filesystem::remove_all(dir);
}

// The hand-made trace of tests/data/arrivals/small.csv, delays per iteration (rank 0..3):
//   0: 0 0 0 1          last 3, spread 1,   gap 1,     late {3} (MAD 0, so the 100 us floor)
//   1: 0 .001 .002 2    last 3, spread 2,   gap 1.998, late {3} (threshold 3*1.4826*0.001)
//   2: .5 0 0 0         last 0, spread .5,  gap .5,    late {0}
//   3: 0 0 3 3          last 2, spread 3,   gap 0,     late {}  (half the group is "late")
//   4: 0 0 0 0          last 0, spread 0,   gap 0,     late {}
TEST(ArrivalTraceStats, SummaryOfTheHandMadeTrace) {
  const ArrivalTrace t = read_arrival_trace(kData / "small.csv");
  const ArrivalTraceSummary s = summarize_arrival_trace(t);
  EXPECT_EQ(s.n, 4u);
  EXPECT_EQ(s.iterations, 5u);
  // Nearest rank over spreads {0, .5, 1, 2, 3}: p50 is the 3rd, p90 and p99 the 5th.
  EXPECT_NEAR(s.spread.p50_s, 1.0, 1e-9);
  EXPECT_NEAR(s.spread.p90_s, 3.0, 1e-9);
  EXPECT_NEAR(s.spread.p99_s, 3.0, 1e-9);
  EXPECT_NEAR(s.spread.max_s, 3.0, 1e-9);
  // Gaps {0, 0, .5, 1, 1.998}.
  EXPECT_NEAR(s.gap.p50_s, 0.5, 1e-9);
  EXPECT_NEAR(s.gap.p90_s, 1.998, 1e-9);
  EXPECT_NEAR(s.gap.max_s, 1.998, 1e-9);
  EXPECT_EQ(s.late_histogram, (std::vector<std::size_t>{2, 3, 0, 0}));
  EXPECT_NEAR(s.mean_late_ranks, 0.6, 1e-12);
  EXPECT_EQ(s.late_by_rank, (std::vector<std::size_t>{1, 0, 0, 2}));
  // The last iteration, where all arrive together, has no last rank (it counted for rank 0).
  EXPECT_EQ(s.last_by_rank, (std::vector<std::size_t>{1, 0, 1, 2}));
  // Last ranks 3 3 0 2 (then nobody): one of the three pairs of iterations with a late rank repeats.
  EXPECT_NEAR(s.persistence, 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(s.chance_uniform, 0.25, 1e-12);
  EXPECT_NEAR(s.chance_empirical, 0.25 * 0.25 + 0.25 * 0.25 + 0.5 * 0.5, 1e-12);
  // Ranks 0 and 3 are both last twice, but one of rank 0's is the iteration where all arrive
  // together, which names nobody: rank 3.
  EXPECT_EQ(t.most_often_last(), 3u);
}

TEST(ArrivalTraceStats, LateRuleFloorAndK) {
  const std::vector<double> d{0, 0, 0, 50e-6};
  EXPECT_TRUE(late_ranks(d, LateRule{}).empty());  // under the 100 us floor
  EXPECT_EQ(late_ranks(d, LateRule{3.0, 10e-6}), (std::vector<std::uint32_t>{3}));
  const std::vector<double> spread{0, 1e-3, 2e-3, 3e-3, 4e-3, 9e-3};
  // median 2.5 ms, MAD 1.5 ms: 3 * 1.4826 * 1.5 ms = 6.7 ms > 6.5 ms, but k = 2 flags rank 5.
  EXPECT_TRUE(late_ranks(spread, LateRule{}).empty());
  EXPECT_EQ(late_ranks(spread, LateRule{2.0, 0.0}), (std::vector<std::uint32_t>{5}));
  expect_config_error([] { LateRule{-1.0, 0.0}.validate(); }, {"k = -1"});
  expect_config_error([] { LateRule{3.0, std::nan("")}.validate(); }, {"floor = nan"});
}

TEST(ArrivalTraceStats, FitLoadsBackAndSamples) {
  const ArrivalTrace t = read_arrival_trace(kData / "small.csv");
  const ArrivalSpec fit = fit_arrival_model(t);
  ASSERT_EQ(fit.stragglers.size(), 1u);
  EXPECT_EQ(fit.stragglers[0].rank, 3u);  // most often late
  EXPECT_EQ(fit.stragglers[0].delay.kind(), DistributionKind::Empirical);
  EXPECT_EQ(fit.stragglers[0].delay.samples_s().size(), 5u);  // the largest delay of each iteration
  EXPECT_NEAR(fit.persistence, 1.0 / 3.0, 1e-12);  // the all-tied last iteration forms no pair
  ASSERT_TRUE(fit.jitter.has_value());

  test::TempDir dir;
  const auto file = dir.path() / "fit.yaml";
  {
    std::ofstream out(file);
    out << YAML::Dump(arrival_to_yaml(fit)) << "\n";
  }
  const ArrivalSpec back = parse_arrival_yaml(YAML::LoadFile(file.string()), "arrival", 4u);
  // Same model: the dump of what was read equals the dump of what was written.
  EXPECT_EQ(YAML::Dump(arrival_to_yaml(back)), YAML::Dump(arrival_to_yaml(fit)));
  const Arrivals a = make_arrivals(back, 4, 3, 7);
  EXPECT_EQ(a.arrival_s.size(), 4u);
}

TEST(ArrivalTraceModel, TrialsReplayIterationsModuloCount) {
  const std::string yaml = fmt::format("{{model: trace, file: {}}}", (kData / "small.csv").string());
  const ArrivalSpec spec = parse_arrival_yaml(YAML::Load(yaml), "arrival", 4u);
  EXPECT_EQ(spec.model, ArrivalModel::Trace);
  // Rank 3 is last in two iterations, ranks 0 and 2 in one each; the last iteration, where all
  // arrive together, names nobody (it counted for rank 0, which then tied with 3 and won).
  EXPECT_EQ(spec.expected_stragglers(), (std::vector<std::uint32_t>{3}));
  ArrivalProcess process(spec, 4, 1);
  const Arrivals a6 = process.at(6);  // 6 mod 5 = iteration index 1
  EXPECT_NEAR(a6.arrival_s[3], 2.0, 1e-9);
  EXPECT_EQ(a6.stragglers, (std::vector<std::uint32_t>{3}));
  EXPECT_FALSE(a6.straggler_moved());
  EXPECT_TRUE(process.at(2).straggler_moved());  // iteration 2: rank 0 last
  EXPECT_FALSE(process.at(4).straggler_moved());  // all arrive together: nobody moved
  // Written back and parsed again: the same model.
  const ArrivalSpec back = parse_arrival_yaml(arrival_to_yaml(spec), "arrival", 4u);
  EXPECT_EQ(back.describe(), spec.describe());

  const ArrivalSpec one = parse_arrival_yaml(YAML::Load(fmt::format("{{model: trace, file: {}, iteration: 3}}",
                                                                    (kData / "small.csv").string())), "arrival", 4u);
  ASSERT_EQ(one.trace->size(), 1u);
  EXPECT_EQ(one.trace->delay_s[0][2], 3.0);
  EXPECT_EQ(arrival_to_yaml(one)["iteration"].as<int>(), 3);
}

TEST(ArrivalTraceModel, YamlErrors) {
  const auto parse = [](const std::string& yaml, std::optional<std::uint32_t> n = std::nullopt) {
    return parse_arrival_yaml(YAML::Load(yaml), "arrival", n, kData);
  };
  expect_config_error([&] { parse("{model: trace}"); }, {"arrival", "needs 'file: TRACE.csv'"});
  expect_config_error([&] { parse("{model: trace, file: small.csv}", 8); },
                      {"arrival.file", "line 1", "small.csv", "group has 4 ranks", "n = 8"});
  expect_config_error([&] { parse("{model: trace, file: nope.csv}"); }, {"arrival.file", "nope.csv"});
  expect_config_error([&] { parse("{model: trace, file: small.csv, iteration: 9}"); },
                      {"arrival.iteration", "no iteration 9", "0..4"});
  expect_config_error([&] { parse("{model: trace, file: small.csv, iteration: x}"); }, {"arrival.iteration", "'x'"});
  expect_config_error([&] { parse("{model: trace, file: small.csv, persistence: 0.5}"); }, {"persistence"});
  ArrivalSpec spec = parse("{model: trace, file: small.csv}");
  expect_config_error([&] { spec.validate(5u); }, {"group of 4 ranks but n = 5"});
  spec.trace.reset();
  expect_config_error([&] { spec.validate(); }, {"model 'trace' needs a trace file"});
}

}  // namespace
}  // namespace collsim
