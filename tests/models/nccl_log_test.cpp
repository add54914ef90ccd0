#include "collsim/models/formats/nccl_log.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <string>

#include "collsim/models/error.hpp"
#include "test_support.hpp"

namespace collsim {
namespace {

using test::expect_config_error;
using test::expect_contains;

std::filesystem::path data(const std::string& name) {
  return std::filesystem::path(COLLSIM_TEST_DATA_DIR) / "nccl-tests" / name;
}

// The ConfigError message of `fn`, or a test failure if it does not throw one.
template <typename Fn>
std::string config_error(Fn&& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError thrown";
  return {};
}

void expect_same_rows(const NcclLog& a, const NcclLog& b) {
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    EXPECT_EQ(a.rows[i].size_bytes, b.rows[i].size_bytes) << i;
    EXPECT_EQ(a.rows[i].time_oop_s, b.rows[i].time_oop_s) << i;
    EXPECT_EQ(a.rows[i].time_ip_s, b.rows[i].time_ip_s) << i;
    EXPECT_EQ(a.rows[i].algbw_oop_GBps, b.rows[i].algbw_oop_GBps) << i;
    EXPECT_EQ(a.rows[i].busbw_ip_GBps, b.rows[i].busbw_ip_GBps) << i;
  }
  EXPECT_EQ(a.collective, b.collective);
  EXPECT_EQ(a.nranks, b.nranks);
}

TEST(NcclLog, SharedAllReduceLog) {
  const NcclLog log = read_nccl_log(data("h100-8gpu-allreduce-nvidia-exemplar.txt"));
  EXPECT_EQ(log.collective, Collective::AllReduce);
  EXPECT_EQ(log.nranks, 8u);
  EXPECT_EQ(log.nranks_from, "'nranks' header field");
  ASSERT_EQ(log.rows.size(), 32u);
  EXPECT_EQ(log.zero_size_rows, 0u);
  const auto& first = log.rows.front();
  EXPECT_EQ(first.size_bytes, 8.0);
  EXPECT_EQ(first.count, 2u);
  EXPECT_EQ(first.type, "float");
  EXPECT_EQ(first.redop, "sum");
  EXPECT_DOUBLE_EQ(first.time_oop_s, 13.67e-6);
  EXPECT_DOUBLE_EQ(first.time_ip_s, 13.03e-6);
  EXPECT_EQ(first.wrong_oop, 0.0);
  EXPECT_EQ(first.line, 11u);
  const auto& last = log.rows.back();
  EXPECT_EQ(last.size_bytes, 17179869184.0);
  EXPECT_DOUBLE_EQ(last.time_oop_s, 62648e-6);
  EXPECT_DOUBLE_EQ(last.time_ip_s, 62636e-6);
  EXPECT_DOUBLE_EQ(last.algbw_oop_GBps, 274.23);
  EXPECT_DOUBLE_EQ(last.busbw_oop_GBps, 479.90);
  EXPECT_EQ(last.line, 42u);
  EXPECT_TRUE(log.warnings.empty());
}

TEST(NcclLog, SharedReduceScatterLog) {
  const NcclLog log = read_nccl_log(data("h100-nvswitch-4gpu-reducescatter.txt"));
  EXPECT_EQ(log.collective, Collective::ReduceScatter);
  EXPECT_EQ(log.collective_from, "'Collective test starting' header");
  EXPECT_EQ(log.nranks, 4u);
  ASSERT_EQ(log.rows.size(), 28u);
  EXPECT_EQ(log.zero_size_rows, 3u);
  EXPECT_EQ(log.rows.front().size_bytes, 64.0);
  EXPECT_EQ(log.rows.front().count, 4u);
  EXPECT_DOUBLE_EQ(log.rows.front().time_oop_s, 21.70e-6);
  EXPECT_DOUBLE_EQ(log.rows.front().time_ip_s, 21.49e-6);
  EXPECT_EQ(log.rows.back().size_bytes, 8589934592.0);
  EXPECT_DOUBLE_EQ(log.rows.back().time_oop_s, 18389.0e-6);
  EXPECT_DOUBLE_EQ(log.rows.back().time_ip_s, 18273.4e-6);
  EXPECT_DOUBLE_EQ(log.rows.back().busbw_ip_GBps, 352.56);
}

TEST(NcclLog, SharedAllGatherLog) {
  const NcclLog log = read_nccl_log(data("h100-nvswitch-4gpu-allgather.txt"));
  EXPECT_EQ(log.collective, Collective::AllGather);
  EXPECT_EQ(log.nranks, 4u);
  ASSERT_EQ(log.rows.size(), 28u);
  EXPECT_EQ(log.zero_size_rows, 3u);
  EXPECT_EQ(log.rows.front().redop, "none");
  EXPECT_DOUBLE_EQ(log.rows.front().time_oop_s, 16.98e-6);
  EXPECT_DOUBLE_EQ(log.rows.front().time_ip_s, 16.75e-6);
  EXPECT_DOUBLE_EQ(log.rows.back().time_oop_s, 18732.3e-6);
  EXPECT_DOUBLE_EQ(log.rows.back().time_ip_s, 18160.5e-6);
}

TEST(NcclLog, MpirunTagOutputPrefixIsStripped) {
  const NcclLog base = read_nccl_log(data("h100-8gpu-allreduce-nvidia-exemplar.txt"));
  const NcclLog log = read_nccl_log(data("variant-mpirun-tag-output.txt"));
  expect_same_rows(base, log);
  EXPECT_EQ(log.skipped_lines, 0u);
}

TEST(NcclLog, SrunLabelPrefixIsStripped) {
  expect_same_rows(read_nccl_log(data("h100-nvswitch-4gpu-reducescatter.txt")),
                   read_nccl_log(data("variant-srun-label.txt")));
}

TEST(NcclLog, NotAvailableWrongColumnIsAccepted) {
  const NcclLog base = read_nccl_log(data("h100-nvswitch-4gpu-allgather.txt"));
  const NcclLog log = read_nccl_log(data("variant-wrong-na.txt"));
  expect_same_rows(base, log);
  EXPECT_FALSE(log.rows.front().wrong_oop.has_value());
  EXPECT_FALSE(log.rows.back().wrong_ip.has_value());
}

TEST(NcclLog, InterleavedMpiWarningsAreSkipped) {
  const NcclLog log = read_nccl_log(data("variant-mpi-warnings.txt"));
  expect_same_rows(read_nccl_log(data("h100-8gpu-allreduce-nvidia-exemplar.txt")), log);
  EXPECT_EQ(log.skipped_lines, 8u);
}

TEST(NcclLog, CrlfLineEndings) {
  expect_same_rows(read_nccl_log(data("h100-nvswitch-4gpu-reducescatter.txt")), read_nccl_log(data("variant-crlf.txt")));
}

TEST(NcclLog, OldLayoutWithoutRootColumn) {
  const NcclLog log = read_nccl_log(data("variant-old-layout-reducescatter.txt"));
  EXPECT_EQ(log.collective, Collective::ReduceScatter);
  EXPECT_EQ(log.collective_from, "file name");
  EXPECT_EQ(log.nranks, 4u);
  EXPECT_EQ(log.nranks_from, "'Rank' device lines");
  ASSERT_EQ(log.rows.size(), 15u);
  EXPECT_EQ(log.rows.front().redop, "sum");
  EXPECT_EQ(log.rows.front().wrong_oop, 0.0);
  EXPECT_EQ(log.rows.back().size_bytes, 1048576.0);
  EXPECT_DOUBLE_EQ(log.rows.back().time_ip_s, 25.81e-6);
}

TEST(NcclLog, HeaderlessLogInfersRanksFromBusBandwidth) {
  const NcclLog log = read_nccl_log(data("variant-headerless-allreduce.txt"));
  EXPECT_EQ(log.collective, Collective::AllReduce);
  EXPECT_EQ(log.collective_from, "file name");
  EXPECT_EQ(log.nranks, 8u);
  EXPECT_EQ(log.nranks_from, "busbw/algbw ratio");
  ASSERT_EQ(log.warnings.size(), 1u);
  expect_contains(log.warnings.front(), "inferred");
  EXPECT_EQ(log.rows.size(), 32u);
}

TEST(NcclLog, SendRecvWithRankLines) {
  const NcclLog log = read_nccl_log(data("variant-sendrecv-synthetic.txt"));
  EXPECT_EQ(log.collective, Collective::SendRecv);
  EXPECT_EQ(log.nranks, 8u);
  EXPECT_EQ(log.nranks_from, "'Rank' device lines");
  ASSERT_EQ(log.rows.size(), 7u);
  EXPECT_EQ(log.rows.front().size_bytes, 1024.0);
  EXPECT_DOUBLE_EQ(log.rows.back().time_oop_s, 1799.07e-6);
}

struct BadFile {
  const char* file;
  const char* expected;  // a part of the message besides the file name
};

class NcclLogBadFile : public ::testing::TestWithParam<BadFile> {};

TEST_P(NcclLogBadFile, RejectedWithClearError) {
  const BadFile bad = GetParam();
  const std::string message = config_error([&] { read_nccl_log(data(bad.file)); });
  expect_contains(message, bad.file);
  expect_contains(message, bad.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Files, NcclLogBadFile,
    ::testing::Values(
        BadFile{"bad-truncated-row.txt", ":30: malformed nccl-tests data row (expected 13 columns, found 7): '1048576"},
        BadFile{"bad-truncated-file.txt", ":38: malformed nccl-tests data row (expected 13 columns, found 4)"},
        BadFile{"bad-non-numeric.txt",
                ":24: malformed nccl-tests data row (column 'time (in-place)' is 'fast', not a number)"},
        BadFile{"bad-algbw-mismatch.txt",
                ":32: malformed nccl-tests data row (out-of-place algbw 135.55 GB/s does not match"},
        BadFile{"bad-only-size0.txt", "no nccl-tests data rows with size > 0 found"},
        BadFile{"bad-no-data-rows.txt", "no nccl-tests data rows with size > 0 found"},
        BadFile{"bad-empty.txt", "the file is empty"},
        BadFile{"bad-broadcast.txt", "unknown or unsupported collective 'broadcast_perf'"},
        BadFile{"bad-nranks-mismatch.txt", "nranks = 4 (from 'nranks' header field) contradicts busbw/algbw = 1.7500"},
        BadFile{"bad-size-count.txt",
                ":28: malformed nccl-tests data row: size 1048576 is not count 524288 x 4 bytes (float), as nccl-tests "
                "prints it for all_reduce"}),
    [](const ::testing::TestParamInfo<BadFile>& param_info) {
      const std::string name = param_info.param.file;
      std::string out;
      for (const char c : name.substr(0, name.size() - 4)) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return out;
    });

constexpr const char* kHeader =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";

TEST(NcclLog, InlineTextNeedsCollectiveFromSomewhere) {
  const std::string text = std::string("# nranks: 4\n") + kHeader +
                           "     1048576        262144     float     sum      -1    27.37   38.31   57.46      0    26.93   38.94   58.41      0\n";
  expect_contains(config_error([&] { parse_nccl_log(text, "mystery.txt"); }), "cannot tell which collective");
  NcclLogOptions options;
  options.collective = Collective::AllReduce;
  const NcclLog log = parse_nccl_log(text, "mystery.txt", options);
  EXPECT_EQ(log.collective_from, "option");
  EXPECT_EQ(log.nranks, 4u);
}

// What NCCL was told to run: NCCL_ALGO / NCCL_PROTO from a command line in the header or from
// NCCL's own INFO line, with the line; absent settings stay empty; two different values are an
// error naming both lines.
TEST(NcclLog, ReadsNcclAlgoAndProtoSettings) {
  const std::string row =
      "     1048576        262144     float     sum      -1    27.37   38.31   57.46      0    26.93   38.94   58.41      0\n";
  const std::string base = std::string("# all_reduce_perf\n# nranks: 4\n");
  const NcclLog none = parse_nccl_log(base + kHeader + row, "x.txt");
  EXPECT_EQ(none.nccl_algo, "");
  EXPECT_EQ(none.nccl_proto, "");
  const NcclLog cmd =
      parse_nccl_log(base + "# Command: NCCL_ALGO=Ring NCCL_PROTO=Simple ./all_reduce_perf -b 8\n" + kHeader + row, "x.txt");
  EXPECT_EQ(cmd.nccl_algo, "Ring");
  EXPECT_EQ(cmd.nccl_algo_line, 3u);
  EXPECT_EQ(cmd.nccl_proto, "Simple");
  const NcclLog info = parse_nccl_log(base + "host:1:1 [0] NCCL INFO NCCL_ALGO set by environment to NVLS\n" + kHeader + row,
                                      "x.txt");
  EXPECT_EQ(info.nccl_algo, "NVLS");
  EXPECT_EQ(info.nccl_proto, "");
  expect_contains(config_error([&] {
                    parse_nccl_log(base + "# NCCL_ALGO=Ring\n# NCCL_ALGO=Tree\n" + kHeader + row, "x.txt");
                  }),
                  "x.txt:4: NCCL_ALGO = 'Tree' here but 'Ring' on line 3");
}

// A row whose size or count is not a whole number is refused by line and value; it used to be
// taken for a banner line and left out of the fit without a word.
TEST(NcclLog, RowWithNegativeOrFractionalSizeIsRejectedNotSkipped) {
  const std::string base = std::string("# all_reduce_perf\n# nranks: 4\n") + kHeader +
                           "     1048576        262144     float     sum      -1    27.37   38.31   57.46      0    26.93   38.94   58.41      0\n";
  const auto with = [&](const std::string& row) { return parse_nccl_log(base + row, "x.txt"); };
  expect_contains(config_error([&] {
                    with("-64 16 float sum -1 14.92 0.00 0.01 0 14.72 0.00 0.01 0\n");
                  }),
                  "x.txt:5: malformed nccl-tests data row (column 'size' is '-64', not a whole number)");
  expect_contains(config_error([&] {
                    with("64.5 16 float sum -1 14.92 0.00 0.01 0 14.72 0.00 0.01 0\n");
                  }),
                  "x.txt:5: malformed nccl-tests data row (column 'size' is '64.5', not a whole number)");
  expect_contains(config_error([&] {
                    with("64 -16 float sum -1 14.92 0.00 0.01 0 14.72 0.00 0.01 0\n");
                  }),
                  "x.txt:5: malformed nccl-tests data row (column 'count' is '-16', not a whole number)");
  // Lines that only start with digits (dates, times, host:pid prefixes) are still not rows.
  EXPECT_EQ(with("2024-01-01 12:00:00 job started\n-------\n1 more process has sent help message\n").rows.size(), 1u);
}

TEST(NcclLog, AmbiguousCommandLineIsRejected) {
  const std::string text = std::string("# ran all_reduce_perf then all_gather_perf\n# nranks: 4\n") + kHeader +
                           "     1048576        262144     float     sum      -1    27.37   38.31   57.46      0    26.93   38.94   58.41      0\n";
  expect_contains(config_error([&] { parse_nccl_log(text, "x.txt"); }), "names several collectives");
}

TEST(NcclLog, RanksFromThreadsTimesGpus) {
  const std::string text =
      std::string("# Collective test starting: all_gather_perf\n# nThread 2 nGpus 4 minBytes 8\n") + kHeader +
      "     1048576         32768     float    none      -1    22.47   46.66   40.83      0    21.98   47.72   41.76   "
      "   0\n";
  const NcclLog log = parse_nccl_log(text, "x.txt");
  EXPECT_EQ(log.nranks, 8u);
  EXPECT_EQ(log.nranks_from, "nThread * nGpus");
  EXPECT_EQ(log.gpus_per_thread, 4u);  // each of the 2 threads launches on 4 GPUs in turn
}

// nGpus says how many GPUs one thread drives; absent means one (mpirun -np N), and a value above
// nranks cannot be true: it is kept at 1 with a warning.
TEST(NcclLog, GpusPerThreadFromTheHeader) {
  const std::string head = "# Collective test starting: all_gather_perf\n# nranks: 8\n";
  const std::string row =
      "     1048576         32768     float    none      -1    22.47   46.66   40.83      0    21.98   47.72   41.76   "
      "   0\n";
  EXPECT_EQ(parse_nccl_log(head + kHeader + row, "x.txt").gpus_per_thread, 1u);
  const NcclLog wrong = parse_nccl_log(head + "# nThread 1 nGpus 16\n" + kHeader + row, "x.txt");
  EXPECT_EQ(wrong.gpus_per_thread, 1u);
  ASSERT_FALSE(wrong.warnings.empty());
  expect_contains(wrong.warnings.back(), "nGpus = 16");
}

TEST(NcclLog, RanksCannotBeDetermined) {
  // algbw < 1 GB/s carries too few digits to infer n from busbw/algbw.
  const std::string text = std::string("# Collective test starting: all_gather_perf\n# nThread 1 nGpus 1\n") + kHeader +
                           "        1024            64     float    none      -1    16.85    0.06    0.05      0    16.81    0.06    0.05      0\n";
  expect_contains(config_error([&] { parse_nccl_log(text, "x.txt"); }), "cannot determine the number of ranks");
  NcclLogOptions options;
  options.nranks = 4;
  EXPECT_EQ(parse_nccl_log(text, "x.txt", options).nranks, 4u);
  options.nranks = 1;
  expect_contains(config_error([&] { parse_nccl_log(text, "x.txt", options); }), "must be at least 2");
}

TEST(NcclLog, RowsThatLookLikeDataMustBeData) {
  const std::string head = std::string("# Collective test starting: all_reduce_perf\n# nranks: 8\n") + kHeader;
  // A lone number: a row cut after its first column.
  expect_contains(config_error([&] { parse_nccl_log(head + "    8388608\n", "x.txt"); }),
                  "x.txt:4: malformed nccl-tests data row (expected 13 columns, found 1): '8388608'");
  // Zero time for a non-empty row.
  expect_contains(
      config_error([&] {
        parse_nccl_log(head + "  1024  256  float  sum  -1  0.00  0.06  0.11  0  16.17  0.06  0.11  0\n", "x.txt");
      }),
      "positive times");
  // A negative bandwidth.
  expect_contains(
      config_error([&] {
        parse_nccl_log(head + "  1024  256  float  sum  -1  16.94  -0.06  0.11  0  16.17  0.06  0.11  0\n", "x.txt");
      }),
      "column 'algbw (out-of-place)' is negative");
  // A number where the type belongs.
  expect_contains(
      config_error([&] {
        parse_nccl_log(head + "  1024  256  4  sum  -1  16.94  0.06  0.11  0  16.17  0.06  0.11  0\n", "x.txt");
      }),
      "column 'type' is '4'");
  // A word where the root belongs.
  expect_contains(
      config_error([&] {
        parse_nccl_log(head + "  1024  256  float  sum  none  16.94  0.06  0.11  0  16.17  0.06  0.11  0\n", "x.txt");
      }),
      "column 'root' is 'none'");
  // "2 more processes ..." is an MPI message, not a row.
  const NcclLog log = parse_nccl_log(
      head + "2 more processes have sent help message\n  1024  256  float  sum  -1  16.94  0.06  0.11  0  16.17  0.06  0.11  0\n",
      "x.txt");
  EXPECT_EQ(log.rows.size(), 1u);
  EXPECT_EQ(log.skipped_lines, 1u);
}

// A time past the range of every duration (1 hour) is refused by line and column: 1e308 us with
// algbw 0.00 passed the algbw check, was fitted, and printed as a 300-digit measurement.
// A row repeated (two runs pasted into one log) counted twice in the fit; another type or op of
// the same size is its own measurement.
TEST(NcclLog, ARepeatedRowIsRefused) {
  const std::string head = std::string("# Collective test starting: all_reduce_perf\n# nranks: 8\n") + kHeader;
  const std::string row = "  128  32  float  sum  -1  39.5  0.00  0.01  0  39.4  0.00  0.01  0\n";
  expect_contains(config_error([&] { parse_nccl_log(head + row + row, "x.txt"); }),
                  "x.txt:5: malformed nccl-tests data row (it repeats the size, count, type and op of line 4");
  const std::string other_op = "  128  32  float  max  -1  39.5  0.00  0.01  0  39.4  0.00  0.01  0\n";
  EXPECT_EQ(parse_nccl_log(head + row + other_op, "x.txt").rows.size(), 2u);
}

TEST(NcclLog, TimesBeyondAnHourAreRefused) {
  const std::string head = std::string("# Collective test starting: all_reduce_perf\n# nranks: 8\n") + kHeader;
  // And below 1 ns: size/time overflowed to inf, and the algbw check let 1e-300 us through.
  expect_contains(config_error([&] {
                    parse_nccl_log(head + "  128  32  float  sum  -1  1e-300  0.00  0.00  0  39.5  0.00  0.00  0\n",
                                   "x.txt");
                  }),
                  "x.txt:4: malformed nccl-tests data row (column 'time (out-of-place)' is 1e-300 us, below 1 ns");
  expect_contains(
      config_error([&] {
        parse_nccl_log(head + "  128  32  float  sum  -1  1e308  0.00  0.00  0  1e308  0.00  0.00  0\n", "x.txt");
      }),
      "x.txt:4: malformed nccl-tests data row (column 'time (out-of-place)' is 1e+308 us, more than 3600 s (1 hour)");
  expect_contains(
      config_error([&] {
        parse_nccl_log(head + "  128  32  float  sum  -1  39.5  0.00  0.01  0  4e9  0.00  0.00  0\n", "x.txt");
      }),
      "column 'time (in-place)' is 4e+09 us");
  // An hour itself is a time (a slow row at the end of a sweep).
  EXPECT_EQ(parse_nccl_log(head + "  128  32  float  sum  -1  3.6e9  0.00  0.00  0  39.5  0.00  0.01  0\n", "x.txt").rows.size(), 1u);
}

TEST(NcclLog, UnsupportedTableLayoutIsRejected) {
  const std::string text = "# Collective test starting: all_reduce_perf\n#  size count type extra redop root time algbw busbw #wrong time algbw busbw #wrong\n";
  expect_contains(config_error([&] { parse_nccl_log(text, "x.txt"); }), "x.txt:2: unsupported nccl-tests table layout");
}

TEST(NcclLog, WrongResultsAreWarnedAbout) {
  const std::string text = std::string("# Collective test starting: all_reduce_perf\n# nranks: 8\n") + kHeader +
                           "  1024  256  float  sum  -1  16.94  0.06  0.11  3  16.17  0.06  0.11  0\n"
                           "# Out of bounds values : 3 FAILED\n";
  const NcclLog log = parse_nccl_log(text, "x.txt");
  ASSERT_EQ(log.warnings.size(), 2u);
  expect_contains(log.warnings[0], "nonzero #wrong");
  expect_contains(log.warnings[1], "FAILED");
}

TEST(NcclLog, MissingFile) {
  expect_contains(config_error([] { read_nccl_log(data("does-not-exist.txt")); }), "cannot read");
}

TEST(NcclLog, CollectiveNames) {
  EXPECT_EQ(parse_collective("all_reduce"), Collective::AllReduce);
  EXPECT_EQ(parse_collective("reduce_scatter_perf"), Collective::ReduceScatter);
  EXPECT_EQ(parse_collective("all_gather"), Collective::AllGather);
  EXPECT_EQ(parse_collective("sendrecv"), Collective::SendRecv);
  EXPECT_STREQ(collective_name(Collective::ReduceScatter), "reduce_scatter");
  expect_contains(config_error([] { parse_collective("alltoall", "--fit-on"); }), "--fit-on: unknown or unsupported collective 'alltoall'");
}

// One row of an 8-rank all_reduce table (busbw/algbw = 1.75) and of an 8-rank all_gather (0.875).
constexpr const char* kAllReduceRow =
    "     1048576        262144     float     sum      -1    20.09   52.19   91.33       0    20.35   51.53   90.18       0\n";
constexpr const char* kAllGatherRow =
    "     1048576         32768     float    none      -1    17.60   59.59   52.14       0    17.82   58.84   51.49       0\n";

// The text of a test data file with `prefix` in front of every line, as a launcher writes it.
std::string prefixed(const std::string& file, const std::string& prefix) {
  std::ifstream in(data(file));
  std::string out;
  for (std::string line; std::getline(in, line);) out += prefix + line + "\n";
  return out;
}

// Two tests appended to one file: the second start line is refused, naming both lines and both
// binaries (all_reduce then all_gather was read as all_gather with the all_reduce rows mixed in).
TEST(NcclLog, TwoTestsInOneFileAreRefused) {
  const std::string ar = std::string("# Collective test starting: all_reduce_perf\n# nranks: 8\n") + kHeader + kAllReduceRow;
  const std::string ag = std::string("# Collective test starting: all_gather_perf\n# nranks: 8\n") + kHeader + kAllGatherRow;
  expect_config_error([&] { parse_nccl_log(ar + ag, "both.txt"); },
                      {"both.txt:5: a second nccl-tests test starts here (all_gather_perf); the first (all_reduce_perf) "
                       "started on line 1",
                       "split the file before line 5"});
  // The second test's output begins at its version banner.
  const std::string banner = "# nccl-tests version 2.17.1\n";
  expect_config_error([&] { parse_nccl_log(banner + ag + "\n" + banner + ar, "both.txt"); },
                      {"both.txt:8: a second nccl-tests test starts here (all_reduce_perf); the first (all_gather_perf) "
                       "started on line 2",
                       "split the file before line 7"});
  // Old builds print no start line: the second table header says the same.
  const std::string old = std::string("# nranks: 8\n") + kHeader + kAllReduceRow;
  expect_config_error([&] { parse_nccl_log(old + old, "allreduce.txt"); },
                      {"allreduce.txt:5: a second nccl-tests table header; the first is on line 2",
                       "split the file before line 5"});
}

// Without an 'nranks' field or 'Rank' lines, busbw/algbw printed with two decimals singles out n
// only while n is small: at n = 256 every n from 251 to 260 fits the rounding (255 was taken,
// with a warning). That is refused, asking for --nranks; n = 64 is still inferred.
TEST(NcclLog, RanksFromTheRatioOnlyWhenItSinglesOutOne) {
  const std::string head = std::string("# Collective test starting: all_reduce_perf\n") + kHeader;
  const std::string n256 =
      head + "   134217728      33554432     float     sum      -1  1384.83   96.92  193.08       0  1391.43   96.46  192.17       0\n";
  expect_config_error([&] { parse_nccl_log(n256, "x.txt"); },
                      {"x.txt: busbw/algbw = 1.9922 at line 3 fits every nranks from 251 to 260", "--nranks"});
  NcclLogOptions options;
  options.nranks = 256;
  EXPECT_EQ(parse_nccl_log(n256, "x.txt", options).nranks, 256u);
  const NcclLog n64 = parse_nccl_log(
      head + "   134217728      33554432     float     sum      -1  1368.59   98.07  193.08       0  1376.59   97.50  191.95       0\n",
      "x.txt");
  EXPECT_EQ(n64.nranks, 64u);
  EXPECT_EQ(n64.nranks_from, "busbw/algbw ratio");
}

// nccl-tests built with NAME_SUFFIX=_mpi names its binaries all_reduce_perf_mpi and so on.
TEST(NcclLog, BinaryNameSuffixIsAccepted) {
  const std::string tail = std::string("# nranks: 8\n") + kHeader;
  const NcclLog started =
      parse_nccl_log("# Collective test starting: all_reduce_perf_mpi\n" + tail + kAllReduceRow, "x.txt");
  EXPECT_EQ(started.collective, Collective::AllReduce);
  const NcclLog command =
      parse_nccl_log("# mpirun -np 8 ./build/all_gather_perf_mpi -b 8 -e 8G\n" + tail + kAllGatherRow, "x.txt");
  EXPECT_EQ(command.collective, Collective::AllGather);
  EXPECT_EQ(command.collective_from, "command line in the header");
  // A word that only begins like a binary names none.
  EXPECT_EQ(parse_nccl_log("# all_reduce_performance sweep\n" + tail + kAllGatherRow, "allgather.txt").collective,
            Collective::AllGather);
  // A suffix does not make an unsupported binary known.
  expect_contains(config_error([&] {
                    parse_nccl_log("# Collective test starting: broadcast_perf_mpi\n" + tail + kAllReduceRow, "x.txt");
                  }),
                  "unknown or unsupported collective 'broadcast_perf_mpi'");
}

// MPICH / Intel MPI -l or -prepend-rank ("[0] "), Open MPI --timestamp-output with --tag-output,
// and pdsh / clush ("host: ") in front of every line of the exemplar log.
TEST(NcclLog, MoreLauncherPrefixesAreStripped) {
  const std::string file = "h100-8gpu-allreduce-nvidia-exemplar.txt";
  const NcclLog base = read_nccl_log(data(file));
  for (const std::string prefix :
       {"[0] ", "[12]\t", "Mon Jun  2 10:11:12 2025[1,0]<stdout>:", "gpu-n1: ", "dgx-h100-07.cluster: "}) {
    SCOPED_TRACE(prefix);
    const NcclLog log = parse_nccl_log(prefixed(file, prefix), file);
    expect_same_rows(base, log);
    EXPECT_EQ(log.skipped_lines, base.skipped_lines);
  }
}

// A prefix without a fixed form ("host: ", "[0] ") is removed only from lines that start with one
// seen in front of a comment line: other text never turns into a row.
TEST(NcclLog, LoosePrefixesAreOnlyStrippedInFrontOfNcclTestsLines) {
  const std::string text = std::string("gpu-n1: # Collective test starting: all_reduce_perf\n# nranks: 8\n") + kHeader +
                           "gpu-n1: " + kAllReduceRow + "Retries: 2 3\n[3] 4 5\ngpu-n2: 6 7\n";
  const NcclLog log = parse_nccl_log(text, "x.txt");
  EXPECT_EQ(log.rows.size(), 1u);
  EXPECT_EQ(log.skipped_lines, 3u);
}

// nccl-tests text behind a prefix collsim does not know: the error says so and shows the prefix.
TEST(NcclLog, UnknownPrefixIsNamedWhenNoRowIsFound) {
  expect_config_error(
      [&] { parse_nccl_log(prefixed("h100-8gpu-allreduce-nvidia-exemplar.txt", "job 42 | "), "x.txt"); },
      {"x.txt: no nccl-tests data rows with size > 0 found",
       "36 lines carry nccl-tests text behind a per-line prefix collsim does not know (first on line 6: 'job 42 |')"});
}

// Opt-in columns of newer nccl-tests: -S 1 adds a timestamp ("2025-06-01 10:11:12", two tokens),
// the per-iteration report adds i_min i_max i_p99 i_cv% after each #wrong. The header says where
// each column is; a row that does not have the header's columns is refused as before.
// A line as wide as the header's rows that starts with a size is a row, whatever else it holds:
// a count of "x" made the line look like a banner, and the row left the fit unseen.
TEST(NcclLog, ARowWithAWordForANumberIsRefusedNotSkipped) {
  const std::string text =
      "# Collective test starting: all_reduce_perf\n# nranks: 8\n"
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n"
      "     1048576             x     float     sum      -1    20.09   52.19   91.33       0    20.35   51.53   90.18       0\n";
  test::expect_config_error([&] { parse_nccl_log(text, "x.txt"); }, {"x.txt:4", "column 'count' is 'x'"});
}

TEST(NcclLog, ColumnsAreTakenWhereTheHeaderPutsThem) {
  const std::string head = "# Collective test starting: all_reduce_perf\n# nranks: 8\n";
  const std::string stamped_header =
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  "
      "#wrong           timestamp\n";
  const std::string per_iter_header =
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99  "
      "  i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv% \n";
  const std::string cputime_header =
      "#       size         count      type   redop    root  cputime   algbw   busbw  #wrong  cputime   algbw   busbw  "
      "#wrong\n";
  const std::string tables[] = {
      head + stamped_header +
          "     1048576        262144     float     sum      -1    20.09   52.19   91.33       0    20.35   51.53   90.18       0  "
          "2025-06-01 10:11:12\n",
      head + per_iter_header +
          "     1048576        262144     float     sum      -1    20.09   52.19   91.33       0    19.48    22.10    21.70     "
          "2.10    20.35   51.53   90.18       3    19.74    22.39    21.99     2.10\n",
      head + cputime_header + kAllReduceRow};
  for (const std::string& text : tables) {
    const NcclLog log = parse_nccl_log(text, "x.txt");
    ASSERT_EQ(log.rows.size(), 1u);
    const NcclLogRow& row = log.rows.front();
    EXPECT_DOUBLE_EQ(row.time_oop_s, 20.09e-6);
    EXPECT_DOUBLE_EQ(row.algbw_oop_GBps, 52.19);
    EXPECT_DOUBLE_EQ(row.busbw_oop_GBps, 91.33);
    EXPECT_DOUBLE_EQ(row.time_ip_s, 20.35e-6);
    EXPECT_DOUBLE_EQ(row.algbw_ip_GBps, 51.53);
    EXPECT_DOUBLE_EQ(row.busbw_ip_GBps, 90.18);
  }
  EXPECT_EQ(parse_nccl_log(tables[1], "x.txt").rows.front().wrong_ip, 3.0);
  expect_contains(config_error([&] { parse_nccl_log(head + stamped_header + kAllReduceRow, "x.txt"); }),
                  "x.txt:4: malformed nccl-tests data row (expected 15 columns, found 13)");
  expect_contains(config_error([&] { parse_nccl_log(head + per_iter_header + kAllReduceRow, "x.txt"); }),
                  "x.txt:4: malformed nccl-tests data row (expected 21 columns, found 13)");
  // A header without the two time/algbw/busbw/#wrong groups is not a layout collsim can read.
  expect_contains(config_error([&] {
                    parse_nccl_log(head + "#  size count type redop root time algbw busbw #wrong\n", "x.txt");
                  }),
                  "x.txt:3: unsupported nccl-tests table layout");
}

// Old builds print the largest error of the results ("error", 2e-07 for a float sum) where #wrong
// is now: it is no count of wrong elements, so it warns of nothing (every row used to).
TEST(NcclLog, OldErrorColumnIsNotACountOfWrongResults) {
  const std::string text =
      "# nranks: 8\n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "     1048576        262144   float     sum    20.09   52.19   91.33  2e-07    20.35   51.53   90.18  1e-07\n";
  const NcclLog log = parse_nccl_log(text, "allreduce.txt");
  ASSERT_EQ(log.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(log.rows.front().wrong_oop.value_or(0), 2e-07);
  EXPECT_TRUE(log.warnings.empty()) << log.warnings.front();
}

// A row's size is its count times the type's width, times nranks for reduce_scatter and
// all_gather (whose count is one rank's part). A row that breaks it would fit the wrong bytes.
TEST(NcclLog, SizeMustBeCountTimesTheTypesWidth) {
  const std::string head = std::string("# Collective test starting: all_reduce_perf\n# nranks: 8\n") + kHeader;
  const auto with_type = [&](const std::string& type) {
    return head + "     1048576        262144  " + type +
           "     sum      -1    27.37   38.31   67.04      0    26.93   38.94   68.14      0\n";
  };
  EXPECT_EQ(parse_nccl_log(with_type("float"), "x.txt").rows.size(), 1u);
  EXPECT_EQ(parse_nccl_log(with_type("int32"), "x.txt").rows.size(), 1u);
  expect_contains(config_error([&] { parse_nccl_log(with_type("half"), "x.txt"); }),
                  "x.txt:4: malformed nccl-tests data row: size 1048576 is not count 262144 x 2 bytes (half)");
  expect_contains(config_error([&] { parse_nccl_log(with_type("double"), "x.txt"); }), "x 8 bytes (double)");
  // A type nccl-tests does not name has no known width and is not checked.
  EXPECT_EQ(parse_nccl_log(with_type("mystery"), "x.txt").rows.size(), 1u);
}

// A size of inf or nan was skipped as a line of other text, and the fit lost the row silently.
TEST(NcclLog, ANonFiniteSizeIsAMalformedRow) {
  const std::string head = std::string("# Collective test starting: all_reduce_perf\n# nranks: 8\n") + kHeader;
  const std::string rest =
      "        262144     float     sum      -1    27.37   38.31   67.04      0    26.93   38.94   68.14      0\n";
  for (const char* size : {"inf", "-inf", ".inf", "nan", "NaN", "Infinity"}) {
    expect_contains(
        config_error([&] { parse_nccl_log(head + "  " + size + rest, "x.txt"); }),
        fmt::format("x.txt:4: malformed nccl-tests data row (column 'size' is '{}', not a whole number)", size));
  }
}

// busbw is algbw times the bus factor on every row, not only on the one that decides nranks.
TEST(NcclLog, EveryRowsBusBandwidthIsItsAlgorithmBandwidthTimesTheBusFactor) {
  // The 2 MiB row has the largest algbw: it decides nranks, the rows below it are checked here.
  const std::string head = std::string("# Collective test starting: all_reduce_perf\n# nranks: 8\n") + kHeader +
                           "     2097152        524288     float     sum      -1    42.21   49.68   86.94      0    "
                           "42.09   49.83   87.20      0\n";
  const std::string broken =
      "     1048576        262144     float     sum      -1    27.37   38.31 9999999999      0    26.93   38.94   "
      "68.14      0\n";
  expect_contains(config_error([&] { parse_nccl_log(head + broken, "x.txt"); }),
                  "x.txt:5: malformed nccl-tests data row: busbw 9999999999 GB/s is not algbw 38.31 GB/s x 1.7500, the "
                  "bus factor of all_reduce at nranks = 8 (from 'nranks' header field)");
  const std::string in_place =
      "     1048576        262144     float     sum      -1    27.37   38.31   67.04      0    26.93   38.94   78.14   "
      "   0\n";
  expect_contains(config_error([&] { parse_nccl_log(head + in_place, "x.txt"); }),
                  "busbw 78.14 GB/s is not algbw 38.94");
  const std::string fine =
      "     1048576        262144     float     sum      -1    27.37   38.31   67.04      0    26.93   38.94   68.14   "
      "   0\n";
  EXPECT_EQ(parse_nccl_log(head + fine, "x.txt").rows.size(), 2u);
  // An nranks given as an option overrides the log, which was warned about once: rows are not
  // held to it.
  NcclLogOptions options;
  options.nranks = 16;
  EXPECT_EQ(parse_nccl_log(head + broken, "x.txt", options).rows.size(), 2u);
}

TEST(NcclLog, AllGatherSizeSaysHowManyRanksRan) {
  const std::string ag = "# Collective test starting: all_gather_perf\n";
  // 8 ranks: 32768 floats per rank gather to 1 MiB; busbw/algbw = 7/8.
  const std::string eight =
      "     1048576         32768     float    none      -1    22.47   46.66   40.83      0    21.98   47.72   41.76   "
      "   0\n";
  EXPECT_EQ(parse_nccl_log(ag + "# nranks: 8\n" + kHeader + eight, "x.txt").nranks, 8u);
  // The same row with 65536 floats per rank gathers 1 MiB from 4 ranks, not the 8 the header says.
  const std::string four =
      "     1048576         65536     float    none      -1    22.47   46.66   40.83      0    21.98   47.72   41.76   "
      "   0\n";
  expect_contains(config_error([&] { parse_nccl_log(ag + "# nranks: 8\n" + kHeader + four, "x.txt"); }),
                  "x.txt:4: size 1048576 = count 65536 x 4 bytes (float) x 4 ranks, but nranks = 8 (from 'nranks' "
                  "header field); pass nranks explicitly");
  // An nranks the user gives wins, with a warning, as it does against busbw/algbw.
  NcclLogOptions options;
  options.nranks = 8;
  const NcclLog forced = parse_nccl_log(ag + kHeader + four, "x.txt", options);
  EXPECT_EQ(forced.nranks, 8u);
  ASSERT_FALSE(forced.warnings.empty());
  expect_contains(forced.warnings.back(), "x 4 ranks, but nranks = 8 (from option)");
  // A size that no whole number of ranks explains is malformed whatever nranks is.
  const std::string odd =
      "     1048576         40000     float    none      -1    22.47   46.66   40.83      0    21.98   47.72   41.76   "
      "   0\n";
  expect_contains(config_error([&] { parse_nccl_log(ag + kHeader + odd, "x.txt", options); }),
                  "size 1048576 is not count 40000 x 4 bytes (float) x nranks, as nccl-tests prints it for all_gather");
}

}  // namespace
}  // namespace collsim
