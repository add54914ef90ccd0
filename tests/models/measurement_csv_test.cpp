#include "collsim/models/formats/measurement_csv.hpp"

#include <gtest/gtest.h>

#include <string>

#include "collsim/models/error.hpp"
#include "test_support.hpp"

namespace collsim {
namespace {

using test::expect_contains;

constexpr const char* kHeader =
    "algorithm,n,size_bytes,delay_s,straggler,iteration,time_s,algbw_GBps,busbw_GBps,device,driver_version,nccl_version\n";

std::string error_of(const std::string& text) {
  try {
    parse_measurement_csv(text, "m.csv");
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return {};
}

TEST(MeasurementCsvReader, ParsesTheDocumentedSchema) {
  const std::string text = std::string(kHeader) +
                           "ring,8,1048576,0,-1,0,2.5e-05,41.9,73.4,NVIDIA H100 80GB HBM3,550.54.15,2.21.5\n"
                           "stragglar,8,1048576,0.001,7,1,0.00103,1.01,1.77,\"NVIDIA H100, SXM\",550.54.15,2.21.5\n";
  const MeasurementCsv csv = parse_measurement_csv(text, "m.csv");
  ASSERT_EQ(csv.rows.size(), 2u);
  EXPECT_EQ(csv.rows[0].algorithm, "ring");
  EXPECT_EQ(csv.rows[0].n, 8u);
  EXPECT_EQ(csv.rows[0].size_bytes, 1048576u);
  EXPECT_EQ(csv.rows[0].straggler, -1);
  EXPECT_DOUBLE_EQ(csv.rows[0].time_s, 2.5e-5);
  EXPECT_EQ(csv.rows[0].device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(csv.rows[0].line, 2u);
  EXPECT_EQ(csv.rows[1].straggler, 7);
  EXPECT_DOUBLE_EQ(csv.rows[1].delay_s, 0.001);
  EXPECT_EQ(csv.rows[1].iteration, 1u);
  EXPECT_EQ(csv.rows[1].device, "NVIDIA H100, SXM");
  EXPECT_EQ(csv.rows[1].nccl_version, "2.21.5");
}

TEST(MeasurementCsvReader, ColumnsByNameInAnyOrderWithExtras) {
  const MeasurementCsv csv = parse_measurement_csv(
      "# produced by a test\ntime_s,extra,size_bytes,n,algorithm\n1e-05,x,4096,4,ring\n\n", "m.csv");
  ASSERT_EQ(csv.rows.size(), 1u);
  EXPECT_EQ(csv.rows[0].algorithm, "ring");
  EXPECT_EQ(csv.rows[0].n, 4u);
  EXPECT_EQ(csv.rows[0].delay_s, 0.0);
  EXPECT_EQ(csv.rows[0].line, 3u);
}

TEST(MeasurementCsvReader, ReadsWhatTheWriterWrites) {
  MeasurementRow row;
  row.algorithm = "stragglar";
  row.n = 8;
  row.size_bytes = 4'294'967'296;  // 4 GiB: past 32 bits, exact as an integer
  row.delay_s = 0.005;
  row.straggler = 7;
  row.iteration = 3;
  row.time_s = 0.0123456789;
  row.algbw_GBps = 347.89;  // size_bytes / time_s / 1e9, as the writer computes it
  row.busbw_GBps = 608.81;
  row.launch = "gated";
  row.nccl_algo = "allreduce:tree";
  row.nccl_proto = "Simple";
  row.device = "NVIDIA H100, SXM";
  row.driver_version = "13.0";
  row.nccl_version = "2.28.9";
  const std::string line = format_measurement_csv_row(row);
  EXPECT_EQ(line,
            "stragglar,8,4294967296,0.005,7,3,0.0123456789,347.89,608.81,gated,allreduce:tree,Simple,\"NVIDIA H100, "
            "SXM\",13.0,2.28.9");
  const MeasurementCsv csv = parse_measurement_csv(std::string(kMeasurementCsvHeader) + "\n" + line + "\n", "m.csv");
  ASSERT_EQ(csv.rows.size(), 1u);
  const MeasurementRow& back = csv.rows[0];
  EXPECT_EQ(back.size_bytes, row.size_bytes);
  EXPECT_EQ(back.time_s, row.time_s);
  EXPECT_EQ(back.launch, "gated");
  EXPECT_EQ(back.nccl_algo, "allreduce:tree");
  EXPECT_EQ(back.nccl_proto, "Simple");
  EXPECT_EQ(back.device, row.device);
  EXPECT_EQ(back.nccl_version, row.nccl_version);
  expect_contains(error_of("algorithm,n,size_bytes,time_s,launch\nring,8,1024,1e-5,sometimes\n"),
                  "column 'launch': 'sometimes' is neither 'gated' nor 'ungated'");
}

TEST(MeasurementCsvReader, Detection) {
  EXPECT_TRUE(looks_like_measurement_csv(kHeader));
  EXPECT_TRUE(looks_like_measurement_csv("\n# comment\nalgorithm,n,size_bytes,time_s\n"));
  EXPECT_FALSE(looks_like_measurement_csv("# nThread 1 nGpus 4\n      8   2   float\n"));
  EXPECT_FALSE(looks_like_measurement_csv(""));
}

TEST(MeasurementCsvReader, BadInputs) {
  const std::string h = kHeader;
  expect_contains(error_of(""), "m.csv: the file is empty");
  expect_contains(error_of(h), "header but no data rows");
  expect_contains(error_of("algorithm,n,time_s\nring,4,1e-5\n"), "m.csv:1: the header has no 'size_bytes' column");
  expect_contains(error_of("algorithm,n,n,size_bytes,time_s\n"), "column 'n' appears twice");
  expect_contains(error_of(h + "ring,8,1048576,0,-1,0,2.5e-05\n"), "m.csv:2: expected 12 fields as in the header, found 7");
  expect_contains(error_of(h + "ring,eight,1048576,0,-1,0,2.5e-05,1,1,d,v,v\n"), "m.csv:2: column 'n': 'eight' is not an integer");
  expect_contains(error_of(h + "ring,0,1048576,0,-1,0,2.5e-05,1,1,d,v,v\n"), "column 'n': 0 is outside 1..");
  expect_contains(error_of(h + "ring,8,1MiB,0,-1,0,2.5e-05,1,1,d,v,v\n"), "column 'size_bytes': '1MiB' is not an integer");
  expect_contains(error_of(h + "ring,8,1.5,0,-1,0,2.5e-05,1,1,d,v,v\n"), "column 'size_bytes': '1.5' is not an integer");
  expect_contains(error_of(h + "ring,8,0,0,-1,0,2.5e-05,1,1,d,v,v\n"), "column 'size_bytes': 0 must be positive");
  expect_contains(error_of(h + "ring,8,1024,0,-1,0,0,1,1,d,v,v\n"),
                  "column 'time_s': 0 s is outside 1 ns .. 3600 s (1 hour)");
  // The ranges and the algbw consistency nccl-tests logs are held to.
  expect_contains(error_of(h + "ring,8,1024,0,-1,0,4000,0,0,d,v,v\n"),
                  "column 'time_s': 4000 s is outside 1 ns .. 3600 s");
  expect_contains(error_of(h + "ring,8,1024,0,-1,0,1e-300,0,0,d,v,v\n"), "column 'time_s': 1e-300 s is outside");
  expect_contains(error_of(h + "ring,8,2199023255553,0,-1,0,1,0,0,d,v,v\n"),
                  "'size_bytes': 2199023255553 is more than 1 TiB");
  expect_contains(error_of(h + "ring,8,1048576,0,-1,0,2.5e-05,999,0,d,v,v\n"),
                  "m.csv:2: column 'algbw_GBps': 999 GB/s does not match size_bytes/time_s = 41.9 GB/s");
  expect_contains(error_of(h + "ring,8,1024,-1e-3,-1,0,1e-5,1,1,d,v,v\n"), "column 'delay_s'");
  expect_contains(error_of(h + "ring,8,1024,0,8,0,1e-5,1,1,d,v,v\n"), "column 'straggler': 8 is outside -1..7");
  expect_contains(error_of(h + ",8,1024,0,-1,0,1e-5,1,1,d,v,v\n"), "column 'algorithm': is empty");
  expect_contains(error_of(h + "ring,8,1024,0,-1,0,1e-5,1,1,\"d,v,v\n"), "m.csv:2: unterminated quote");
  expect_contains(error_of(h + "ring,8,1024,0,-1,0,nan,1,1,d,v,v\n"), "column 'time_s': 'nan' is not a number");
}

}  // namespace
}  // namespace collsim
